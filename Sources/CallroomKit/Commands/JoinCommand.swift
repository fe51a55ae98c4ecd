import CallsAudio
import CallsCore
import CallsTUI
import CometChatCallsSDK
import CallsVideo
import Foundation

/// `callroom join SESSION_ID …`
package enum JoinCommand {
    package static let usage = """
        USAGE: callroom join SESSION_ID|INVITE_LINK (--server URL | --settings FILE) --uid UID [--name NAME]
                             (--auth-key KEY | --auth-token TOKEN) [--app-id ID]
                             [--input SPEC] [--output SPEC] [--frame-ms 10|20] [--period-ms auto|2|5|10|20] [--impair SPEC]
                             [--bitrate BPS] [--complexity 0-10] [--redundancy on|off] [--mix-loudest N|all]
                             [--capture ns,agc,aec] [--show LIST] [--hide LIST] [--event-log FILE] [--headless [--duration S]]
                             [--ca-file FILE | --insecure] [--passcode CODE] [--video SOURCE] [--video-out DIR]

        Joins a session on a CallRoom server and shows the call screen. An invite link
        (https://HOST/call/SESSION, as the invite button copies it) gives the server too;
        callroom://call/SESSION gives the session. A link with an invite
        (…/call/SESSION?invite=GRANT) lets a guest in with --name alone: no account, no key.

        OPTIONS:
          --server URL         the callroomd base URL (http://HOST:PORT or https://HOST[:PORT])
          --settings FILE      a cometchat-settings.json instead of --server (callsSDK.host is the server)
          --uid UID            your user id
          --name NAME          your display name
          --passcode CODE      the session's passcode, when its operator set one
          --auth-key KEY       log in with the app's auth key (development)
          --auth-token TOKEN   log in with an auth token from your backend
          --app-id ID          the app id (default: asked from the server)
        \(SDKSetup.tlsUsage)
          --input SPEC         microphone: alsa:NAME (default alsa:default), file:PATH.wav, tone:HZ, null
          --output SPEC        speaker: alsa:NAME (default alsa:default), file:PATH.wav, null
          --video SOURCE       join with video (default: voice only): auto (your camera, else the
                               test pattern), v4l2:/dev/videoN, pattern, avatar, file:PATH.y4m, or
                               none (receive video, send none)
          --video-out DIR      headless: write each participant's received frames to DIR/PID.y4m
                               (frames of another size, as when they share a screen: DIR/PID-WxH.y4m)
          --frame-ms N         audio frame length, 10 or 20 (default 20)
          --period-ms P        playback device period: auto (default: 5 ms with 20 ms frames,
                               2 ms with 10 ms frames, longer only if the device under-runs), or
                               2, 5, 10, 20 fixed (at most the frame)
          --bitrate BPS        Opus bitrate, 6000…510000 (default: 48000 for speech)
          --complexity N       Opus encoder complexity, 0…10 (default 9): 7 costs about a quarter
                               less CPU and 5 about half, each a little quality (docs/benchmarks.md)
          --redundancy on|off  repeat previous frames in each packet when receivers report loss
                               (RFC 2198; default on), or plain Opus with in-band FEC only
          --mix-loudest N|all  with more people talking at once than N, decode and mix the N
                               loudest (default 4: the others cost no CPU, their meters still move),
                               or all of them
          --capture LIST       microphone processing (SpeexDSP), comma-separated: ns (noise
                               suppression), agc (automatic gain), aec (echo cancellation)
          --impair SPEC        simulate a bad network on what you receive, before the jitter buffer:
                               loss=PCT,jitter=MS[,burst=N][,seed=N] (random loss, or in bursts of N
                               packets on average; 0…MS ms of delay variation)
          --show LIST          show these parts of the call screen, comma-separated (the call screen
                               shows chat and invite by default; the SDK hides them): control-panel,
                               header, timer, leave, audio, video, switch-camera, recording,
                               recording-indicator, transcription, captions, audio-mode, raise-hand,
                               invite, participant-list, layout, chat, streaming, streaming-indicator
          --hide LIST          hide these (same names; a name in both is hidden)
          --event-log FILE     also write every listener callback to FILE as JSON lines
          --headless           no screen: every listener callback is printed on stdout as one JSON
                               object per line; commands are read from stdin, one per line (below;
                               those sent while joining run, in order, once joined); end of input
                               leaves
          --duration S         (headless) leave S seconds after joining (exit 0); the end of input
                               then ends only the commands: `< /dev/null` in a script or CI

        Without a sound card the client falls back to null and says so.
        Exit status: 0 after a clean leave (a key, end of input, SIGINT/SIGTERM/SIGHUP) or the call
        ending, 1 on failure, 2 on bad usage, 3 when the connection is lost, 5 when a moderator
        removed you (or your access was revoked), 6 when the server shut down.

        HEADLESS COMMANDS (one per CallSession action; a bad command prints a JSON error line):

        """

    package static func run(_ arguments: [String]) -> Never {
        let args: ArgumentScanner
        do {
            args = try ArgumentScanner(arguments, valued: ["video", "video-out", "passcode", "ca-file", "server", "settings", "uid", "name", "auth-key", "auth-token", "app-id",
                                                           "input", "output", "frame-ms", "period-ms", "impair", "capture", "event-log", "show", "hide",
                                                           "bitrate", "complexity", "redundancy", "mix-loudest", "duration"],
                                       boolean: ["insecure", "headless", "help"])
        } catch { Console.fail("\(error.message)\nRun 'callroom join --help' for usage.") }
        if args.has("help") {
            Console.out(usage + MainActor.assumeIsolated { HeadlessCommands.helpText })
            exit(ExitCode.ok)
        }
        guard args.positionals.count == 1, let target = args.positionals.first else {
            Console.fail("join needs exactly one SESSION_ID\nRun 'callroom join --help' for usage.")
        }
        // An invite link names both: https://HOST/call/SESSION (callroom://call/SESSION needs --server).
        var session = target, linkServer: String?, grant: String?
        if let link = InviteLink(target) {
            session = link.session
            linkServer = link.server
            grant = link.invite
        }
        session = SDKSetup.requireSessionID(session)
        let server = args["server"] ?? (args["settings"] == nil ? linkServer : nil)
        guard (server == nil) != (args["settings"] == nil) else { Console.fail("give exactly one of --server and --settings (or an https invite link)") }
        // An invite link with its grant: a guest needs only a name (no account, no key).
        let guest = grant != nil && args["uid"] == nil && args["auth-key"] == nil && args["auth-token"] == nil
        if guest && SDKSetup.displayName(args) == nil { Console.fail("joining with an invite as a guest needs --name NAME (the name others see)") }
        guard let uid = args["uid"] ?? (args["auth-token"] != nil || guest ? "" : nil) else { Console.fail("--uid is required") }
        guard guest || (args["auth-key"] == nil) != (args["auth-token"] == nil) else { Console.fail("give exactly one of --auth-key and --auth-token") }
        let frameMs = Int(args["frame-ms"] ?? "20") ?? 0
        guard frameMs == 10 || frameMs == 20 else { Console.fail("--frame-ms must be 10 or 20") }
        let periodMs: Int?
        do { periodMs = try SurfaceFlags.playbackPeriod(args["period-ms"], frameMs: frameMs) } catch { Console.fail(error.message) }
        var options = SDKSetup.Options(server: server, settingsFile: args["settings"], appID: args["app-id"], uid: uid,
                                       name: args["name"], authKey: args["auth-key"], authToken: args["auth-token"])
        options.readConnection(args)
        options.invite = grant
        let input = args["input"] ?? "alsa:default", output = args["output"] ?? "alsa:default"
        if let bad = SurfaceFlags.validateEndpoints(input: input, output: output) { Console.fail(bad) }
        let headless = args.has("headless")
        if args["duration"] != nil, !headless { Console.fail("--duration goes with --headless (on the call screen, leave with l or q)") }
        let duration = args.durationSeconds
        let settings = CometChatCalls.sessionSettingsBuilder
            .setSessionType(.voice)
            .setAudioInput(input)
            .setAudioOutput(output)
            .setAudioFrameMs(frameMs)
            .setAudioPeriodMs(periodMs)
        // The terminal app shows chat and invite (the SDK's defaults hide them); flags override.
        if !headless { settings.hideChatButton(false).hideShareInviteButton(false) }
        do { try SurfaceFlags.apply(show: args["show"], hide: args["hide"], to: settings) } catch { Console.fail(error.message) }
        if let b = args["bitrate"] {
            guard let bps = Int(b), (6_000...510_000).contains(bps) else { Console.fail("--bitrate must be 6000…510000 (bits per second)") }
            settings.setAudioBitrate(bps)
        }
        if let c = args["complexity"] {
            guard let complexity = Int(c), (0...10).contains(complexity) else { Console.fail("--complexity must be 0…10") }
            settings.setAudioComplexity(complexity)
        }
        switch args["mix-loudest"] {
        case nil: break
        case "all": settings.setAudioMixLoudest(nil)
        case let n?:
            guard let k = Int(n), (1...64).contains(k) else { Console.fail("--mix-loudest must be 1…64 or all") }
            settings.setAudioMixLoudest(k)
        }
        switch args["redundancy"] {
        case nil, "on": break
        case "off": settings.enableAudioRedundancy(false)
        default: Console.fail("--redundancy must be on or off")
        }
        if let n = SDKSetup.displayName(args) { settings.setDisplayName(n) }
        if let p = args["passcode"] { settings.setPasscode(p) }
        if let list = args["capture"] {
            var p = CaptureProcessing()
            for item in list.split(separator: ",") {
                switch item {
                case "ns": p.noiseSuppression = true
                case "agc": p.automaticGain = true
                case "aec": p.echoCancellation = true
                default: Console.fail("--capture takes ns, agc and aec, comma-separated (not '\(item)')")
                }
            }
            settings.setCaptureProcessing(p)
        }
        if let spec = args["impair"] {
            do {
                let imp = try NetworkImpairment(spec: spec)
                settings.setNetworkImpairment(imp)
                // Hold enough to ride out the delay variation (one frame of margin beyond it).
                settings.setJitterTargetFrames(max(2, Int((imp.jitterMs / Double(frameMs)).rounded(.up)) + 1))
            } catch { Console.fail("--impair: \(error.message)") }
        }
        if let v = args["video"] {
            do { _ = try VideoSourceSpec(v) } catch { Console.fail("--video: \(error)") }
            settings.setSessionType(.video).setVideoSource(v)
        }
        var dump: VideoDump?
        if let dir = args["video-out"] {
            guard headless else { Console.fail("--video-out needs --headless") }
            guard args["video"] != nil else { Console.fail("--video-out needs --video (a video session)") }
            do { dump = try VideoDump(directory: dir) } catch { Console.fail("--video-out: \(error)") }
        }
        let built = settings.build()
        let videoDump = dump
        signal(SIGPIPE, SIG_IGN)
        // With an invite the call token comes from redeeming it (as the user, or as a guest).
        let name = args["name"]
        var token: (@Sendable () async throws(CometChatCallException) -> String)?
        if let g = grant {
            token = { () async throws(CometChatCallException) -> String in try await CometChatCalls.redeemInvite(g, name: name).callToken }
        }
        let redeem = token
        Task { @MainActor in
            if headless {
                await HeadlessSession.run(options: options, sessionID: session, settings: built, token: redeem, eventLog: args["event-log"],
                                          inputEndLeaves: duration == nil, cleanup: { videoDump?.close() })
                videoDump?.attach()
                // (Joined now: the duration counts from here.)
                if let duration {
                    DispatchQueue.main.asyncAfter(deadline: .now() + duration) { MainActor.assumeIsolated { HeadlessSession.finishNow() } }
                }
            } else {
                await CallScreenApp.run(options: options, sessionID: session, settings: built, title: session, eventLog: args["event-log"], token: redeem)
            }
        }
        dispatchMain()
    }
}

/// An invite link: `http(s)://HOST[:PORT][/PREFIX]/call/SESSION` (server and session) or
/// `callroom://call/SESSION` (the session only).
package struct InviteLink: Equatable {
    package var server: String?
    package var session: String
    /// `?invite=GRANT`: the signed invite the link carries (a guest joins with it).
    package var invite: String?

    package init?(_ text: String) {
        guard let url = URL(string: text), let scheme = url.scheme else { return nil }
        let parts = url.path.split(separator: "/").map(String.init)
        if scheme == "callroom" {
            // callroom://call/SESSION: "call" is the host.
            guard url.host == "call", parts.count == 1 else { return nil }
            server = nil
            session = parts[0]
            return
        }
        guard scheme == "http" || scheme == "https", let host = url.host, parts.count >= 2, parts[parts.count - 2] == "call" else { return nil }
        let prefix = parts.dropLast(2).map { "/" + $0 }.joined()
        server = "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")\(prefix)"
        session = parts[parts.count - 1]
        invite = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?.first { $0.name == "invite" }?.value
    }
}

// swift-tools-version:6.0
import PackageDescription

/// CallRoom: a terminal call room, the calls server behind it and the documented
/// headless calls SDK, for Linux. Depends only on the Swift toolchain and on
/// Debian's C libraries (one system-library target each).
let package = Package(
    name: "CallRoom",
    products: [
        .library(name: "CometChatCallsSDK", targets: ["CometChatCallsSDK"]),
        .library(name: "CometChatSDK", targets: ["CometChatSDK"]),
        .library(name: "CallsServer", targets: ["CallsServer"]),
        .executable(name: "callroom", targets: ["callroom"]),
        .executable(name: "callroomd", targets: ["callroomd"]),
        .executable(name: "callroom-bench", targets: ["callroom-bench"]),
        // Measurement only: preloaded by benchmarks and tests to count allocations.
        .library(name: "callroom-alloc-counter", type: .dynamic, targets: ["CallroomAllocCounter"]),
    ],
    targets: [
        // MARK: C libraries (system-library targets; see scripts/install-deps.sh)
        .systemLibrary(name: "CWebSockets", pkgConfig: "libwebsockets", providers: [.apt(["libwebsockets-dev", "libwebsockets-evlib-ev", "libev-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CAlsa", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // No pkgConfig: hiredis.pc adds a -D flag SwiftPM prohibits (the modulemap links it).
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        .systemLibrary(name: "CSofiaSDP", pkgConfig: "sofia-sip-ua", providers: [.apt(["libsofia-sip-ua-dev"])]),
        // No pkgConfig: nice.pc adds -pthread, which SwiftPM prohibits (the modulemap links it).
        .systemLibrary(name: "CNice", providers: [.apt(["libnice-dev"])]),
        .systemLibrary(name: "COgg", pkgConfig: "ogg", providers: [.apt(["libogg-dev"])]),
        .systemLibrary(name: "COpusEnc", pkgConfig: "libopusenc", providers: [.apt(["libopusenc-dev"])]),
        .systemLibrary(name: "CPocketSphinx", pkgConfig: "pocketsphinx", providers: [.apt(["libpocketsphinx-dev", "pocketsphinx-en-us"])]),
        // No pkgConfig: shout.pc adds -pthread, which SwiftPM prohibits (the modulemap links it).
        .systemLibrary(name: "CShout", providers: [.apt(["libshout-dev"])]),
        .systemLibrary(name: "CAVFormat", pkgConfig: "libavformat", providers: [.apt(["libavformat-dev"])]),
        .systemLibrary(name: "CVpx", pkgConfig: "vpx", providers: [.apt(["libvpx-dev"])]),
        .systemLibrary(name: "CChafa", pkgConfig: "chafa", providers: [.apt(["libchafa-dev"])]),
        // No pkgConfig: Debian's libyuv-dev ships no .pc file.
        .systemLibrary(name: "CYuv", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CFreeType", pkgConfig: "freetype2", providers: [.apt(["libfreetype-dev", "libfontconfig-dev"])]),
        .systemLibrary(name: "CV4L2", pkgConfig: "libv4l2", providers: [.apt(["libv4l-dev"])]),
        .systemLibrary(name: "CSocketBatch"),
        .systemLibrary(name: "CBPF", pkgConfig: "libbpf", providers: [.apt(["libbpf-dev"])]),
        // No pkgConfig: ncursesw.pc only adds -D flags SwiftPM prohibits (shim.h sets what it needs).
        .systemLibrary(name: "CNcurses", providers: [.apt(["libncurses-dev"])]),

        .target(name: "CallroomAllocCounter"),

        // MARK: Swift libraries (arrows point down: nothing imports upward)
        // Support any module needs: locks, clocks, the scheduler, the logs, the argument scanner.
        .target(name: "CallsSupport"),
        // The wire (signalling messages, RTP, the media bind) and media framing (RED, the impairment model).
        .target(name: "CallsCore", dependencies: ["CallsSupport"]),
        .target(name: "CallsSecurity", dependencies: ["CallsCore", "COpenSSL", "CSRTP"]),
        // Browsers' side of a call (issue #37): session descriptions through sofia-sip's SDP parser.
        .target(name: "CallsWebRTC", dependencies: ["CNice", "CallsCore", "CallsSecurity", "CallsTransport", "CSofiaSDP"]),
        .target(name: "CallsObjectStorage", dependencies: ["CallsSupport", "CallsSecurity", "CallsTransport"]),
        .target(name: "CallsTransport", dependencies: ["CallsCore", "CWebSockets", "CSocketBatch", "CCurl"]),
        .target(name: "CallsAudio", dependencies: ["CallsCore", "COpus", "CAlsa", "CSpeexDSP", "CSndFile"]),
        .target(name: "CallsRecording", dependencies: ["CallsCore", "CallsAudio", "COgg", "COpusEnc", "COpus", "CShout", "CAVFormat"]),
        .target(name: "CallsCaptions", dependencies: ["CallsSupport", "CallsCore", "CallsAudio", "CPocketSphinx"],
                resources: [.copy("Resources/caption_worker.py"), .copy("Resources/whisper-worker.py"), .copy("Resources/moonshine-worker.py")]),
        .target(name: "CallsVideo", dependencies: ["CallsCore", "CVpx", "CChafa", "CYuv", "CV4L2", "CFreeType", "CZlib"]),
        // The C edges of the server's store and cluster: one Swift type owning each handle.
        .target(name: "CallsDatabase", dependencies: ["CSQLite", "CPostgres"]),
        // The store: schema and migrations, the typed queries, the group-committing writer, the
        // outbox rows written with each transition (over CallsDatabase: SQLite | PostgreSQL).
        .target(name: "CallsStore", dependencies: ["CallsCore", "CallsSecurity", "CallsDatabase"]),
        .target(name: "CallsRedis", dependencies: ["CallsCore", "CHiredis"]),
        // The media relay: UDP workers, the relay table, consent, the eBPF fast path (CBPF).
        .target(name: "CallsRelay", dependencies: ["CallsCore", "CallsSecurity", "CallsTransport", "CBPF"]),
        // The cluster's shared state over Redis: the node registry (liveness, room placement) and
        // the bus between nodes (envelopes).
        // How signalling messages reach the parts behind the gateway: the router seam, message
        // families, the outbox the rooms send through, resume tokens.
        .target(name: "CallsSignalling", dependencies: ["CallsCore"]),
        .target(name: "CallsCluster", dependencies: ["CallsCore", "CallsStore", "CallsRedis", "CallsSignalling", "CallsSecurity"]),
        // Members the server starts into rooms: the recorder, the transcriber, the live streamer
        // (each a participant over signalling and the relay), and the hub that serves their sockets.
        .target(name: "CallsMembers", dependencies: ["CallsCore", "CallsSecurity", "CallsTransport", "CallsAudio", "CallsRecording",
                                                     "CallsCaptions", "CallsStore"]),
        .target(name: "CallsServer", dependencies: ["CallsCore", "CallsSecurity", "CallsTransport", "CallsAudio", "CallsRecording", "CallsCaptions",
                                                    "CallsMembers", "CallsCluster", "CallsSignalling", "CallsDatabase", "CallsStore", "CallsRedis", "CallsRelay", "CallsWebRTC",
                                                    "CallsObjectStorage"],
                resources: [.copy("Resources/web")]),
        .target(name: "CometChatCallsSDK", dependencies: ["CallsCore", "CallsSecurity", "CallsTransport", "CallsAudio", "CallsVideo"]),
        .target(name: "CometChatSDK", dependencies: ["CallsCore", "CallsTransport", "CometChatCallsSDK"]),
        .target(name: "CallsTUI", dependencies: ["CallsCore", "CometChatCallsSDK", "CallsVideo", "CNcurses"]),

        // MARK: Executables
        .executableTarget(name: "callroomd", dependencies: ["CallsServer", "CallsStore", "CallsRecording", "CallsRedis"]),
        // The user's commands, shared by both executables (the call screen, ringing, bots, sessions).
        .target(name: "CallroomKit", dependencies: ["CometChatCallsSDK", "CometChatSDK", "CallsTUI", "CallsServer", "CallsAudio", "CallsCaptions", "CallsVideo"]),
        .executableTarget(name: "callroom", dependencies: ["CallroomKit", "CallsCore"]),
        // Benchmarks and the load generator: not in the shipped `callroom` (which forwards `bench` here).
        .executableTarget(name: "callroom-bench", dependencies: ["CallroomKit", "CometChatCallsSDK", "CometChatSDK", "CallsServer", "CallsStore", "CallsAudio",
                                                                 "CallsCaptions", "CallsVideo", "CallsTUI", "CallsTransport", "CallsSecurity", "CallsRelay",
                                                                 "CallsMembers", "CallsSupport"]),

        // MARK: Examples
        .executableTarget(name: "CallsSDKExample", dependencies: ["CometChatCallsSDK"], path: "Examples/CallsSDKExample"),
        .executableTarget(name: "RingingExample", dependencies: ["CometChatCallsSDK", "CometChatSDK"], path: "Examples/RingingExample"),

        // MARK: Tests
        .target(name: "CallRoomTestSupport", dependencies: ["CallsTransport", "CallsServer", "CallsCore", "CallsAudio", "CallsSecurity", "CallsDatabase", "CallsStore", "CallsCluster", "CallsRedis", "CallsRelay"], path: "Tests/CallRoomTestSupport"),
        .testTarget(name: "CallsCoreTests", dependencies: ["CallsCore"]),
        .testTarget(name: "CallsObjectStorageTests", dependencies: ["CallsObjectStorage", "CallRoomTestSupport"]),
        .testTarget(name: "CallsWebRTCTests", dependencies: ["CNice", "CZlib", "CallsCore", "CallsWebRTC", "CallsSecurity", "CallsServer", "CallsTransport", "CallRoomTestSupport"]),
        .testTarget(name: "CallsSecurityTests", dependencies: ["CallsSecurity", "COpenSSL", "CallRoomTestSupport"]),
        .testTarget(name: "CallsRecordingTests", dependencies: ["CallsRecording", "CallsCaptions", "CallsAudio", "CallsCore", "CallsVideo", "CallRoomTestSupport"]),
        .testTarget(name: "CallsVideoTests", dependencies: ["CallsVideo", "CallsCore"], exclude: ["Golden"]),
        .testTarget(name: "CallsAudioTests", dependencies: ["CallsAudio", "CallsCore", "CallRoomTestSupport"]),
        .testTarget(name: "CallsServerTests", dependencies: ["CallsServer", "CallsCore", "CallsTransport", "CallsDatabase", "CallsStore", "CallsCluster", "CallsSignalling", "CallsRedis", "CallsRelay", "CallsSecurity", "CallsObjectStorage", "CallsCaptions", "CallRoomTestSupport", "callroomd"]),
        .testTarget(name: "CometChatCallsSDKTests", dependencies: ["CometChatCallsSDK", "CallsServer", "CallsStore", "CallsObjectStorage", "CallsRecording", "CallsMembers", "CallsTransport", "CallsTUI", "CallRoomTestSupport"]),
        .testTarget(name: "CallsTUITests", dependencies: ["CallsTUI", "CometChatCallsSDK", "CZlib", "CallRoomTestSupport"], exclude: ["Golden"]),
        .testTarget(name: "IntegrationTests", dependencies: ["CallsCore", "CallsAudio", "CallsVideo", "CallsTUI", "CallsServer", "CallsSecurity", "CallsTransport", "CallsDatabase", "CallsStore", "CallsObjectStorage", "CallsCluster", "CallsRedis", "CallsRelay", "CometChatCallsSDK", "CZlib",
                                                         "CallRoomTestSupport", "CallroomKit", "callroom", "callroom-bench", "callroomd", "CallsSDKExample", "RingingExample"]),
    ],
    swiftLanguageModes: [.v6]
)

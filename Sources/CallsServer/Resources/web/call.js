// CallRoom in a browser: join a room from its invite link. Plain JS, no framework, no build step.
// The page speaks the same signalling as every client (docs/protocol.md); its media go over
// WebRTC to the server's gateway (`webrtcOffer` / `webrtcAnswer`).
"use strict";
(() => {
  const page = document.body.dataset;
  // An account holder's way in without an invite: `#authToken=…` (a fragment: never sent to the
  // server in the request line, never in a log), exchanged for a call token of this session. It
  // leaves the address bar at once (kept for this tab only, so a reload still works): a link
  // copied, shared or shown on a screen never carries it.
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("authToken");
  const tokenKey = "callroom.authToken." + document.body.dataset.session;
  if (fromLink) {
    try { sessionStorage.setItem(tokenKey, fromLink); } catch (e) { /* storage off: this load only */ }
    history.replaceState(null, "", location.pathname + location.search);
  }
  const authToken = fromLink || (() => { try { return sessionStorage.getItem(tokenKey); } catch (e) { return null; } })();
  const $ = (id) => document.getElementById(id);
  const state = {
    phase: "prejoin", name: "", token: null, ws: null, pc: null, me: null, roster: new Map(), local: null,
    withVideo: true, muted: false, cameraOff: false, hand: false, resumeToken: null, streams: new Map(),
    byPid: new Map(), negotiating: false, again: false, heldByHost: false, ownPending: { audio: 0, video: 0 }, dominant: null, chat: [], error: null, reconnecting: false,
    answers: 0, lastOfferAt: -Infinity, sessionId: page.session, lobby: new Map(), locked: false,
    // What the server runs in the room, told to everyone in it (recording, captions, the live
    // stream), the features it offers a host, and the captions on screen: one line per speaker.
    features: [], recording: false, transcribing: false, streaming: "stopped", captions: new Map(), showCaptions: true,
    // Presenters' shared terminals: pid → {columns, rows, cells, cursor}.
    shares: new Map(),
    unread: 0,
    // (Hosts) uids banned from the room for good (`roomBans`), people removed from this call who
    // may be let back in (uid → name), and a Remove or Ban button waiting for its second click.
    bans: [], removed: new Map(), armed: null,
    // My shared screen (a getDisplayMedia track) while I share it, and the sender my video goes
    // out on (the camera's, or one added for the screen when I joined with audio only).
    screen: null, videoSender: null,
    // Whether I last asked for my video paused (the server's word may still be on its way).
    videoPausedAsked: false,
    // Connection quality, as the terminal shows it: the loss of each sender's audio here (pid →
    // percent, the last report's window), and what my receivers say of mine (`lossReport`:
    // receiver pid → {loss, at}; the worst of the last 6 s counts).
    peerLoss: new Map(), heardLoss: new Map(),
  };
  // For people debugging a call (and the tests): the page's state.
  window.callroom = state;

  function show(id, on) { $(id).classList.toggle("hidden", !on); }
  function notice(text, isError) {
    const n = $("notice");
    n.textContent = text;
    n.classList.toggle("error", !!isError);
    show("notice", !!text);
    state.error = isError ? text : null;
  }
  function initials(name) { return (name || "?").split(/\s+/).map((w) => w[0] || "").join("").slice(0, 2).toUpperCase(); }

  // ---- Before joining: devices, preview, input meter -------------------------------------
  let meterTimer = null;
  async function openDevices() {
    if (state.local) state.local.getTracks().forEach((t) => t.stop());
    const mic = $("mic").value, cam = $("camera").value;
    const constraints = { audio: mic ? { deviceId: { exact: mic } } : true, video: state.withVideo ? (cam ? { deviceId: { exact: cam } } : true) : false };
    try {
      state.local = await navigator.mediaDevices.getUserMedia(constraints);
    } catch (e) {
      state.local = null;
      if (e.name === "NotAllowedError" || e.name === "SecurityError") {
        notice("The browser was not allowed to use your microphone or camera. Allow it in the address bar, then reload.", true);
      } else if (e.name === "NotFoundError" || e.name === "OverconstrainedError") {
        if (state.withVideo) { state.withVideo = false; $("camera-note").textContent = "No camera found: you join with audio only."; return openDevices(); }
        notice("No microphone found. Plug one in, then reload.", true);
      } else {
        notice("Your devices could not be opened: " + e.message, true);
      }
      return false;
    }
    $("preview-video").srcObject = state.local;
    show("preview-video", state.local.getVideoTracks().length > 0);
    show("preview-placeholder", state.local.getVideoTracks().length === 0);
    await listDevices();
    startMeter(state.local);
    notice("");
    return true;
  }
  async function listDevices() {
    const devices = await navigator.mediaDevices.enumerateDevices();
    for (const [id, kind] of [["mic", "audioinput"], ["camera", "videoinput"]]) {
      const select = $(id), chosen = select.value;
      select.replaceChildren(...devices.filter((d) => d.kind === kind).map((d, i) => {
        const o = document.createElement("option");
        o.value = d.deviceId;
        o.textContent = d.label || (kind === "audioinput" ? "Microphone " : "Camera ") + (i + 1);
        return o;
      }));
      if (chosen) select.value = chosen;
    }
  }
  function startMeter(stream) {
    clearInterval(meterTimer);
    if (!stream.getAudioTracks().length) return;
    const ctx = new AudioContext();
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 512;
    ctx.createMediaStreamSource(stream).connect(analyser);
    const data = new Float32Array(analyser.fftSize);
    meterTimer = setInterval(() => {
      analyser.getFloatTimeDomainData(data);
      let sum = 0;
      for (const v of data) sum += v * v;
      const db = 10 * Math.log10(sum / data.length + 1e-10);
      $("meter-level").style.width = Math.max(0, Math.min(100, (db + 60) * 100 / 60)) + "%";
    }, 100);
  }

  // ---- Joining: the invite becomes a call token; the signalling connection -------------------
  async function join(withVideo) {
    await state.devicesReady;
    const name = $("name").value.trim();
    if (!name) { notice("Type your name first: it is how the others see you.", true); $("name").focus(); return; }
    if (!page.invite && !authToken) { notice("This link has no invite in it. Ask for an invite link (it ends in ?invite=…).", true); return; }
    state.name = name;
    state.withVideo = withVideo && !!(state.local && state.local.getVideoTracks().length);
    if (!withVideo && state.local) state.local.getVideoTracks().forEach((t) => { t.stop(); state.local.removeTrack(t); });
    $("join").disabled = $("join-audio").disabled = true;
    notice("Joining…");
    let body;
    try {
      const r = page.invite
        ? await fetch("/v3/invites/redeem", { method: "POST", headers: { "content-type": "application/json", appId: page.appId },
                                               body: JSON.stringify({ invite: page.invite, name }) })
        : await fetch("/v3.0/call_tokens", { method: "POST", headers: { "content-type": "application/json", appId: page.appId, authToken },
                                              body: JSON.stringify({ sessionId: page.session }) });
      body = await r.json();
      if (!r.ok) throw new Error((body.error && body.error.message) || ("HTTP " + r.status));
    } catch (e) {
      $("join").disabled = $("join-audio").disabled = false;
      notice((page.invite ? "This invite does not let you in: " : "Your account cannot join this call: ") + e.message, true);
      return;
    }
    state.token = body.data.token;
    state.sessionId = body.data.sessionId || page.session;
    connect(false);
  }

  function connect(resuming) {
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/signal", "callroom-signal");
    state.ws = ws;
    ws.onopen = () => {
      if (resuming && state.resumeToken) send({ type: "resume", resumeToken: state.resumeToken });
      else send({ type: "join", v: 1, callToken: state.token, sessionId: state.sessionId, displayName: state.name,
                  audioMuted: state.muted, videoPaused: !state.withVideo, sessionType: state.withVideo ? "video" : "voice" });
    };
    ws.onmessage = (e) => { try { handle(JSON.parse(e.data)); } catch (err) { console.error(err); } };
    ws.onclose = () => {
      if (state.ws !== ws || state.phase !== "call") return;
      // A network blip: take the participant back within the grace period.
      state.reconnecting = true;
      $("status").textContent = "Reconnecting…";
      setTimeout(() => { if (state.phase === "call") connect(true); }, 1000);
    };
  }
  function send(m) { if (state.ws && state.ws.readyState === 1) state.ws.send(JSON.stringify(m)); }

  function handle(m) {
    switch (m.type) {
      case "joined":
      case "resumed":
        state.me = m.you;
        state.ownPending = { audio: 0, video: 0 };  // (a new connection: nothing of mine is in flight on it)
        state.videoPausedAsked = !!m.you.isVideoPaused;
        followHost(m.you);
        state.resumeToken = m.resumeToken;
        state.roster = new Map(m.participants.map((p) => [p.pid, p]));
        state.dominant = m.dominantSpeaker || null;
        state.reconnecting = false;
        if (m.inviteLink) state.inviteLink = m.inviteLink + (page.invite ? "?invite=" + page.invite : "");
        if (m.features) state.features = m.features;
        state.locked = !!m.locked;
        enterCall();
        restartMedia();
        break;
      case "lobbyWaiting": state.phase = "lobby"; notice("Waiting for the host to let you in…"); break;
      case "participantJoined": state.roster.set(m.participant.pid, m.participant); render(); negotiate(); break;
      case "participantLeft":
        state.roster.delete(m.participant.pid);
        dropStreams(m.participant.pid);
        if (m.reason === "removed") state.removed.set(m.participant.uid, m.participant.name);
        state.peerLoss.delete(m.participant.pid);
        state.heardLoss.delete(m.participant.pid);
        render();
        negotiate();
        break;
      case "participantUpdated":
        state.roster.set(m.participant.pid, m.participant);
        if (state.me && m.participant.pid === state.me.pid) { state.me = m.participant; followHost(m.participant, m.change); }
        render();
        break;
      case "dominantSpeaker": state.dominant = m.pid || null; render(); break;
      case "lobbyRequest":
        state.lobby.set(m.participant.pid, m.participant);
        $("status").textContent = m.participant.name + " is waiting to join (People).";
        render();
        break;
      case "lobbyResolved": state.lobby.delete(m.pid); render(); break;
      case "roomLocked": state.locked = !!m.value; render(); break;
      case "roomBans": state.bans = Array.isArray(m.uids) ? m.uids : []; render(); break;
      case "lossReport":
        if (typeof m.lossPercent === "number") { state.heardLoss.set(m.pid, { loss: m.lossPercent, at: Date.now() }); render(); }
        break;
      case "chat":
        state.chat.push(m);
        // Unread while the chat is not on screen (one's own messages excepted): the button counts them.
        if (!chatOpen() && !(state.me && m.pid === state.me.pid)) state.unread += 1;
        renderChat();
        break;
      case "screenShare": applyShare(m.pid, m.frame); break;
      case "recording": state.recording = !!m.active; render(); break;
      case "streaming": state.streaming = m.state; render(); break;
      case "transcription":
        state.transcribing = !!m.active;
        if (!m.active) state.captions.clear();
        render();
        renderCaptions();
        break;
      case "caption":
        if (m.caption && !m.caption.text && m.caption.final) {
          // The utterance's last pass heard nothing: its guess (a partial) leaves the screen.
          const shown = state.captions.get(m.caption.pid);
          if (shown && !shown.final) { state.captions.delete(m.caption.pid); renderCaptions(); }
        } else if (m.caption && m.caption.text) {
          const c = m.caption;
          state.captions.set(c.pid, { name: c.name, text: c.text, final: !!c.final, at: Date.now() });
          // A screen reader is given the final lines only (partials change twice a second).
          if (c.final && state.showCaptions) $("captions-read").textContent = c.name + ": " + c.text;
          renderCaptions();
        }
        break;
      case "webrtcAnswer":
        state.pc.setRemoteDescription({ type: "answer", sdp: m.sdp }).then(() => {
          state.answers += 1;
          state.negotiating = false;
          if (state.again) { state.again = false; negotiate(); }
        }).catch((e) => { state.negotiating = false; notice("The media could not be set up: " + e.message, true); });
        break;
      case "left": leave(reasonText(m.reason, m.by)); break;
      case "error": onError(m.code, m.message); break;
      default: break;
    }
  }
  function reasonText(reason, by) {
    switch (reason) {
      // (The server's LeaveReason values, protocol.md.)
      case "removed": return "You were removed from the call" + (by ? " by " + by : "") + ".";
      case "revoked": return "Your invite was revoked.";
      case "timedOut": return "You were alone in the call for a long time, so it ended.";
      case "server shutting down": return "The server is restarting. Join again in a moment.";
      case "left": return "You left the call.";
      default: return "You are no longer in the call (" + reason + ").";
    }
  }
  function onError(code, message) {
    const fatal = { AUTH_ERR_TOKEN_EXPIRED: "Your invite has expired.", AUTH_ERR_TOKEN_REVOKED: "Your invite was revoked.",
                    ERR_ROOM_LOCKED: "The room is locked: nobody new may join now.", ERR_LOBBY_DENIED: "The host did not let you in.",
                    ERR_ROOM_FULL: "The room is full.", ERR_BANNED_FROM_ROOM: "You may not join this room.",
                    ERR_REMOVED_FROM_SESSION: "You were removed from this call." };
    if (fatal[code]) { leave(fatal[code]); return; }
    if (code === "ERR_RESUME_EXPIRED") { state.resumeToken = null; connect(false); return; }
    if (code === "ERR_MUTED_BY_MODERATOR" && state.ownPending.audio > 0) state.ownPending.audio -= 1;  // (no update will answer it)
    if (code === "ERR_WEBRTC_OFFER") {
      // The offer was refused: no answer comes. Too soon after the last one: offer again in a
      // moment (it carried changes); otherwise the next change may offer again.
      state.negotiating = false;
      if (state.again || (message || "").startsWith("Too many offers")) { state.again = false; setTimeout(negotiate, 300); return; }
    }
    notice(message || code, true);
  }

  // ---- Media: one RTCPeerConnection, renegotiated as people come and go ----------------------
  function restartMedia() {
    if (state.pc) state.pc.close();
    state.streams.clear();
    state.byPid.clear();
    const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle", rtcpMuxPolicy: "require", iceServers: JSON.parse(page.iceServers || "[]") });
    state.pc = pc;
    const audio = state.local && state.local.getAudioTracks()[0];
    const video = state.screen || (state.local && state.local.getVideoTracks()[0]);
    if (audio) pc.addTransceiver(audio, { direction: "sendonly", streams: [state.local] });
    state.videoSender = video ? pc.addTransceiver(video, { direction: "sendonly", streams: state.local ? [state.local] : [] }).sender : null;
    pc.ontrack = (e) => {
      const pid = e.streams[0] && e.streams[0].id;
      if (!pid) return;
      let s = state.streams.get(pid);
      if (!s) { s = new MediaStream(); state.streams.set(pid, s); }
      s.getTracks().filter((t) => t.kind === e.track.kind).forEach((t) => s.removeTrack(t));
      s.addTrack(e.track);
      // A section's track is muted until its packets flow (someone who sends no video has a
      // video track that never unmutes): the tile follows.
      e.track.onmute = e.track.onunmute = () => render();
      const list = state.byPid.get(pid) || [];
      list.push(e.transceiver);
      state.byPid.set(pid, list);
      render();
    };
    pc.onconnectionstatechange = () => {
      $("status").textContent = pc.connectionState === "connected" ? "" :
        pc.connectionState === "failed" ? "Media could not get through (a firewall?)." : "Connecting media… (" + pc.connectionState + ")";
      if (pc.connectionState === "failed" && state.phase === "call") setTimeout(restartMedia, 2000);
    };
    negotiate();
  }
  function dropStreams(pid) {
    for (const t of state.byPid.get(pid) || []) { try { t.stop(); } catch (e) { /* already stopped */ } }
    state.byPid.delete(pid);
    state.streams.delete(pid);
  }
  // One offer at a time, and at most one every 300 ms (the server takes one every 250 ms);
  // changes meanwhile make one more.
  async function negotiate() {
    const pc = state.pc;
    if (!pc || state.phase !== "call") return;
    if (state.negotiating) { state.again = true; return; }
    state.negotiating = true;
    const wait = state.lastOfferAt + 300 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (state.pc !== pc || state.phase !== "call") { state.negotiating = false; return; }
    // A receiving pair of sections for everyone else (free ones are reused by the server).
    const others = [...state.roster.keys()].filter((p) => !state.me || p !== state.me.pid).length;
    const receiving = (kind) => pc.getTransceivers().filter((t) => !t.stopped && t.direction === "recvonly" && t.receiver.track.kind === kind).length;
    for (const kind of ["audio", "video"]) for (let n = receiving(kind); n < others; n++) pc.addTransceiver(kind, { direction: "recvonly" });
    try {
      await pc.setLocalDescription(await pc.createOffer());
      state.lastOfferAt = performance.now();
      send({ type: "webrtcOffer", sdp: pc.localDescription.sdp });
    } catch (e) {
      state.negotiating = false;
      notice("The media could not be set up: " + e.message, true);
    }
    send({ type: "subscribeVideo", pids: [...state.roster.keys()].filter((p) => !state.me || p !== state.me.pid) });
  }

  // ---- What this browser receives, told to the room as every client tells it -----------------
  // Every 2 s, a `receiverReport`: per sender (its SSRC, as the answer names it), the share of
  // its packets that never came in that window, and for video the frames decoded a second — the
  // senders' FEC, redundancy and video bitrate follow the worst of their receivers, browsers too.
  // `red: true`, `redBlocks: 8`: redundant audio never breaks a browser (the gateway passes RED
  // where the browser negotiated it — libwebrtc's decoder splits up to 32 blocks — and cuts it to
  // the primary frame where not, reading up to 8, what native senders send at most).
  let reportTimer = null;
  const lastInbound = new Map();  // ssrc → the counters at the last report
  async function reportReception() {
    const pc = state.pc;
    if (!pc || state.phase !== "call" || pc.connectionState !== "connected") return;
    let stats;
    try { stats = await pc.getStats(); } catch (e) { return; }
    const reports = [], seen = new Set();
    stats.forEach((r) => {
      if (r.type !== "inbound-rtp" || typeof r.ssrc !== "number") return;
      seen.add(r.ssrc);
      const now = { received: r.packetsReceived || 0, lost: Math.max(0, r.packetsLost || 0), frames: r.framesDecoded || 0, at: r.timestamp };
      const before = lastInbound.get(r.ssrc) || { received: 0, lost: 0, frames: 0, at: now.at - 2000 };
      lastInbound.set(r.ssrc, now);
      const received = now.received - before.received, lost = Math.max(0, now.lost - before.lost);
      const sender = r.kind === "audio" ? [...state.roster.values()].find((p) => p.ssrc === r.ssrc) : null;
      if (received + lost <= 0) { if (sender) state.peerLoss.delete(sender.pid); return; }  // (silent, muted: nothing to say)
      const report = { ssrc: r.ssrc, lossPercent: Math.round(1000 * lost / (received + lost)) / 10 };
      if (r.kind === "video") report.framesPerSecond = Math.round(10 * (now.frames - before.frames) * 1000 / Math.max(1, now.at - before.at)) / 10;
      else {
        report.red = true;
        report.redBlocks = 8;
        if (sender) state.peerLoss.set(sender.pid, report.lossPercent);
      }
      reports.push(report);
    });
    for (const ssrc of [...lastInbound.keys()]) if (!seen.has(ssrc)) lastInbound.delete(ssrc);
    if (reports.length) send({ type: "receiverReport", reports });
    render();
  }
  // What a tile says of a connection (the terminal's thresholds): nothing while good (under 2 %
  // lost) or unmeasured.
  function connectionText(pid, mine) {
    let loss = state.peerLoss.get(pid);
    if (mine) {
      const fresh = [...state.heardLoss.values()].filter((h) => Date.now() - h.at < 6000).map((h) => h.loss);
      loss = fresh.length ? Math.max(...fresh) : undefined;
    }
    if (loss === undefined || loss < 2) return "";
    return (loss <= 8 ? "Unstable connection" : "Poor connection") + (mine ? ": others hear you with gaps" : "");
  }

  // ---- In the call -------------------------------------------------------------------------
  function enterCall() {
    if (state.phase === "call") return;
    if (state.phase === "lobby") notice("");
    state.phase = "call";
    clearInterval(meterTimer);
    reportTimer = setInterval(reportReception, 2000);
    show("prejoin", false);
    show("call", true);
    notice("");
    render();
  }
  function render() {
    if (state.phase !== "call") return;
    const tiles = $("tiles");
    const seen = new Set();
    for (const p of state.roster.values()) {
      seen.add(p.pid);
      let tile = tiles.querySelector('[data-pid="' + CSS.escape(p.pid) + '"]');
      if (!tile) {
        tile = document.createElement("div");
        tile.className = "tile";
        tile.dataset.pid = p.pid;
        const v = document.createElement("video");
        v.autoplay = true; v.playsInline = true;
        const i = document.createElement("div"); i.className = "initials";
        const l = document.createElement("div"); l.className = "label";
        const q = document.createElement("div"); q.className = "quality";
        tile.append(v, i, l, q);
        tiles.append(tile);
      }
      const mine = state.me && p.pid === state.me.pid;
      const v = tile.querySelector("video");
      const stream = mine ? (state.screen ? state.screenStream : state.local) : state.streams.get(p.pid);
      if (v.srcObject !== (stream || null)) v.srcObject = stream || null;
      v.muted = !!mine;
      const hasVideo = !!stream && stream.getVideoTracks().some((t) => mine || !t.muted) && !p.isVideoPaused;
      v.classList.toggle("hidden", !hasVideo);
      tile.querySelector(".initials").textContent = hasVideo ? "" : initials(p.name);
      tile.querySelector(".label").textContent = (p.isPresenting ? "🖥 " : "") + (p.isPinned ? "📌 " : "") + (p.isAudioMuted ? "🔇 " : "") + (p.raisedHandTimestamp ? "✋ " : "") + p.name + (mine ? " (you)" : "");
      const quality = connectionText(p.pid, mine);
      tile.querySelector(".quality").textContent = quality;
      tile.querySelector(".quality").classList.toggle("hidden", !quality);
      tile.classList.toggle("speaking", state.dominant === p.pid);
      tile.classList.toggle("pinned", !!p.isPinned);  // (a host pinned them for the whole room: first, and larger)
      tile.classList.toggle("presenting", !!p.isPresenting);  // (a screen: shown whole, not cropped to the tile)
    }
    for (const t of [...tiles.children]) if (!seen.has(t.dataset.pid)) t.remove();
    // Moderators (a host) act on the others from here: mute (and allow unmuting when the room
    // holds a host's mute), stop video, remove; admit or deny the lobby; lock.
    const host = !!state.me && state.me.role === "moderator";
    const button = (label, message, then) => {
      const b = document.createElement("button");
      b.textContent = label;
      b.onclick = () => { send(message); if (then) then(); };
      return b;
    };
    // What cannot be undone from here at once (a removal, a ban) asks first: the button's first
    // click turns it into "Confirm …" for 5 s (kept across re-renders), the second acts.
    const confirmed = (label, message, key) => {
      const armed = state.armed && state.armed.key === key;
      const b = document.createElement("button");
      b.textContent = armed ? "Confirm " + label.toLowerCase() : label;
      b.classList.toggle("danger", armed);
      b.onclick = () => {
        if (state.armed && state.armed.key === key) { state.armed = null; send(message); render(); return; }
        clearTimeout(state.armedTimer);
        state.armed = { key };
        state.armedTimer = setTimeout(() => { state.armed = null; render(); }, 5000);
        render();
      };
      return b;
    };
    $("people").replaceChildren(...[...state.roster.values()].map((p) => {
      const li = document.createElement("li");
      li.dataset.pid = p.pid;
      li.append(document.createTextNode(p.name + (p.role === "moderator" ? " · host" : "") + (p.isPinned ? " · pinned" : "") + (p.isAudioMuted ? " · muted" : "") + (p.raisedHandTimestamp ? " · hand raised" : "") + (p.isPresenting ? " · presenting" : "")));
      if (host) li.append(" ", button(p.isPinned ? "Unpin" : "Pin", p.isPinned ? { type: "pin", pid: null } : { type: "pin", pid: p.pid }));
      if (host && p.pid !== state.me.pid) {
        if (!p.isAudioMuted) li.append(" ", button("Mute", { type: "muteParticipant", pid: p.pid }));
        if (p.mutedByModerator) li.append(" ", button("Allow unmute", { type: "allowUnmute", pid: p.pid }));
        if (p.videoSsrc && !p.isVideoPaused) li.append(" ", button("Stop video", { type: "pauseParticipantVideo", pid: p.pid }));
        li.append(" ", confirmed("Remove", { type: "removeParticipant", pid: p.pid }, "remove " + p.pid));
        if (p.uid !== state.me.uid) li.append(" ", confirmed("Ban", { type: "setBan", uid: p.uid, value: true }, "ban " + p.pid));
      }
      return li;
    }), ...[...state.lobby.values()].map((p) => {
      const li = document.createElement("li");
      li.dataset.lobby = p.pid;
      li.append(document.createTextNode(p.name + " is waiting "), button("Admit", { type: "admitFromLobby", pid: p.pid }), " ",
                button("Deny", { type: "denyFromLobby", pid: p.pid }));
      return li;
    }), ...(host ? [...state.removed].filter(([uid]) => !state.bans.includes(uid)) : []).map(([uid, name]) => {
      // Removed from this call: out until the call ends, unless a host lets them back in.
      const li = document.createElement("li");
      li.dataset.removed = uid;
      li.append(document.createTextNode(name + " was removed "),
                button("Let back in", { type: "allowRejoin", uid }, () => { state.removed.delete(uid); render(); }));
      return li;
    }), ...(host ? state.bans : []).map((uid) => {
      const li = document.createElement("li");
      li.dataset.banned = uid;
      li.append(document.createTextNode((state.removed.get(uid) || uid) + " is banned from this room "),
                button("Lift ban", { type: "setBan", uid, value: false }, () => state.removed.delete(uid)));
      return li;
    }));
    // What runs in the room, said to everyone; a host starts and stops what the server offers.
    const running = [];
    if (state.recording) running.push(["rec", "● Recording"]);
    for (const p of state.roster.values()) if (p.isRecording) running.push(["rec", "● " + p.name + " is recording"]);
    if (state.streaming === "live") running.push(["", "Live"]);
    if (state.streaming === "reconnecting") running.push(["", "Live: reconnecting"]);
    if (state.transcribing) running.push(["", "Captions on"]);
    $("indicators").replaceChildren(...running.map(([cls, text]) => {
      const span = document.createElement("span");
      if (cls) span.className = cls;
      span.textContent = text;
      return span;
    }));
    show("indicators", running.length > 0);
    const features = [["recording", state.recording, "Start recording", "Stop recording"],
                      ["transcription", state.transcribing, "Start captions", "Stop captions"],
                      ["streaming", state.streaming !== "stopped", "Go live", "Stop live stream"]]
      .filter(([f]) => state.features.includes(f));
    $("host-controls").replaceChildren(...features.map(([feature, on, start, stop]) => {
      const b = button(on ? stop : start, { type: "setSessionFeature", feature, value: !on });
      b.dataset.feature = feature;
      return b;
    }));
    show("host-controls", host && features.length > 0);
    show("cc", state.transcribing);
    $("cc").textContent = state.showCaptions ? "Hide captions" : "Show captions";
    $("lock").classList.toggle("hidden", !host);
    // A share whose presenter stopped presenting or left goes (its frames redraw it otherwise:
    // a speaker change is no reason to rebuild a grid of up to 30,000 cells).
    if ([...state.shares.keys()].some((pid) => !(state.roster.get(pid) || {}).isPresenting)) scheduleShares();
    $("lock").textContent = state.locked ? "Unlock room" : "Lock room";
    $("count").textContent = state.roster.size + (state.roster.size === 1 ? " person" : " people");
    $("mute").setAttribute("aria-pressed", String(state.muted));
    $("mute").textContent = state.muted ? (state.heldByHost ? "Muted by host" : "Unmute") : "Mute";
    $("mute").disabled = state.muted && !!state.heldByHost;
    $("camera-toggle").textContent = state.cameraOff ? "Camera on" : "Camera off";
    // (While the screen is shared it is my video: the camera waits until the share ends.)
    $("camera-toggle").disabled = !(state.local && state.local.getVideoTracks().length) || !!state.screen;
    $("share-screen").textContent = state.screen ? "Stop sharing" : "Share screen";
    $("share-screen").setAttribute("aria-pressed", String(!!state.screen));
    $("hand").setAttribute("aria-pressed", String(state.hand));
  }
  // ---- Shared terminals ----------------------------------------------------------------------
  // A presenter's terminal arrives as text (protocol.md, "Terminal screen share"): a grid of
  // cells per presenter, each frame applied whole or not at all, drawn once an animation frame.
  const ANSI = ["#000000", "#cd0000", "#00cd00", "#cdcd00", "#0000ee", "#cd00cd", "#00cdcd", "#e5e5e5",
                "#7f7f7f", "#ff0000", "#00ff00", "#ffff00", "#5c5cff", "#ff00ff", "#00ffff", "#ffffff"];
  const TERMINAL_FG = "#e5e5e5", TERMINAL_BG = "#101317";
  function colour(n) {
    if (typeof n !== "number" || n < 0) return null;
    if (n >= 0x1000000) return "#" + (n & 0xffffff).toString(16).padStart(6, "0");
    if (n < 16) return ANSI[n];
    if (n < 232) { const v = [0, 95, 135, 175, 215, 255], i = n - 16; return "rgb(" + v[Math.floor(i / 36)] + "," + v[Math.floor(i / 6) % 6] + "," + v[i % 6] + ")"; }
    if (n < 256) { const g = 8 + (n - 232) * 10; return "rgb(" + g + "," + g + "," + g + ")"; }
    return null;
  }
  const segmenter = typeof Intl !== "undefined" && Intl.Segmenter ? new Intl.Segmenter() : null;
  const graphemes = (t) => segmenter ? [...segmenter.segment(t)].map((g) => g.segment) : Array.from(t);
  const styleKeys = new Map();  // a style's JSON → the style (cells keep the key: equal styles draw as one span)
  function applyShare(pid, f) {
    const ok = f && Number.isInteger(f.columns) && Number.isInteger(f.rows) && f.columns > 0 && f.rows > 0 && f.columns <= 300 && f.rows <= 100
      && Array.isArray(f.styles) && Array.isArray(f.runs) && typeof pid === "string"
      && f.runs.every((r) => r && Number.isInteger(r.x) && Number.isInteger(r.y) && Number.isInteger(r.style) && typeof r.text === "string"
        && r.x >= 0 && r.x < f.columns && r.y >= 0 && r.y < f.rows && r.style >= 0 && r.style < f.styles.length);
    if (!ok) return;
    let g = state.shares.get(pid);
    if (f.full) {
      g = { columns: f.columns, rows: f.rows, cells: new Array(f.columns * f.rows).fill(null), cursor: null };
      state.shares.set(pid, g);
    }
    if (!g || g.columns !== f.columns || g.rows !== f.rows) return;  // (a share is joined at a full frame)
    const keys = f.styles.map((st) => {
      const k = JSON.stringify(st || {});
      if (!styleKeys.has(k) && styleKeys.size < 4096) styleKeys.set(k, st || {});
      return k;
    });
    for (const r of f.runs) {
      const row = r.y * g.columns;
      if (r.text === "") { g.cells[row + r.x] = { t: "", k: keys[r.style] }; continue; }
      let x = r.x;
      for (const ch of graphemes(r.text)) {
        if (x >= g.columns) break;
        g.cells[row + x] = { t: ch, k: keys[r.style] };
        x += 1;
      }
    }
    g.cursor = f.cursor && Number.isInteger(f.cursor.x) && Number.isInteger(f.cursor.y) ? f.cursor : null;
    scheduleShares();
  }
  function paint(span, st, cursor) {
    let fg = colour(st.fg), bg = colour(st.bg);
    if (st.reverse) [fg, bg] = [bg || TERMINAL_BG, fg || TERMINAL_FG];
    if (cursor) [fg, bg] = [bg || TERMINAL_BG, fg || TERMINAL_FG];
    if (fg) span.style.color = fg;
    if (bg) span.style.backgroundColor = bg;
    if (st.bold) span.style.fontWeight = "bold";
    if (st.dim) span.style.opacity = "0.6";
    if (st.italic) span.style.fontStyle = "italic";
    if (st.underline) span.style.textDecoration = "underline";
  }
  let sharesPending = false;
  function scheduleShares() {
    if (sharesPending) return;
    sharesPending = true;
    requestAnimationFrame(renderShares);
  }
  function renderShares() {
    sharesPending = false;
    for (const pid of [...state.shares.keys()]) {
      const p = state.roster.get(pid);
      if (!p || !p.isPresenting) state.shares.delete(pid);  // stopped presenting, or left
    }
    const box = $("shares");
    const seen = new Set();
    for (const [pid, g] of state.shares) {
      seen.add(pid);
      let view = box.querySelector('[data-pid="' + CSS.escape(pid) + '"]');
      if (!view) {
        view = document.createElement("figure");
        view.className = "share";
        view.dataset.pid = pid;
        view.append(document.createElement("figcaption"), document.createElement("pre"));
        box.append(view);
      }
      view.querySelector("figcaption").textContent = "Shared by " + state.roster.get(pid).name;
      const pre = view.querySelector("pre");
      const rows = [];
      for (let y = 0; y < g.rows; y++) {
        const row = document.createElement("div");
        let span = null, key = null, text = "";
        const flush = () => { if (span) { span.textContent = text; row.append(span); } };
        for (let x = 0; x < g.columns; x++) {
          const c = g.cells[y * g.columns + x];
          if (c && c.t === "") continue;  // the right half of the wide character before it
          const k = c ? c.k : "{}";
          const cursor = !!g.cursor && g.cursor.x === x && g.cursor.y === y;
          if (!span || k !== key || cursor || span.dataset.cursor) {
            flush();
            span = document.createElement("span");
            text = "";
            key = k;
            paint(span, styleKeys.get(k) || {}, cursor);
            if (cursor) span.dataset.cursor = "1";
          }
          text += c ? c.t : " ";
        }
        flush();
        rows.push(row);
      }
      pre.replaceChildren(...rows);
      // As large as fits, up to 16 px; never under 9 px (a phone scrolls the terminal sideways instead).
      pre.style.fontSize = Math.max(9, Math.min(16, (box.clientWidth - 40) / (g.columns * 0.62))) + "px";
    }
    for (const v of [...box.children]) if (!seen.has(v.dataset.pid)) v.remove();
    show("shares", state.shares.size > 0);
  }

  // Captions: each speaker's latest line (a partial replaced as it grows, then its final), the
  // three most recent, a final kept 8 s and a partial 15 s.
  function renderCaptions() {
    const now = Date.now();
    for (const [pid, c] of state.captions) if (now - c.at > (c.final ? 8000 : 15000)) state.captions.delete(pid);
    const lines = [...state.captions.values()].sort((a, b) => a.at - b.at).slice(-3);
    $("captions").replaceChildren(...lines.map((c) => {
      const p = document.createElement("p");
      if (!c.final) p.className = "partial";
      const b = document.createElement("strong");
      b.textContent = c.name + ": ";
      p.append(b, document.createTextNode(c.text));
      return p;
    }));
    show("captions", state.phase === "call" && state.transcribing && state.showCaptions && lines.length > 0);
  }
  setInterval(() => { if (state.captions.size) renderCaptions(); }, 1000);
  function chatOpen() { return !$("side").classList.contains("hidden") && !$("chat-panel").classList.contains("hidden"); }
  function renderChat() {
    $("panel-chat").textContent = state.unread > 0 ? "Chat (" + state.unread + ")" : "Chat";
    $("panel-chat").setAttribute("aria-label", state.unread > 0 ? "Chat, " + state.unread + " unread" : "Chat");
    $("messages").replaceChildren(...state.chat.slice(-200).map((m) => {
      const li = document.createElement("li");
      const b = document.createElement("strong");
      b.textContent = m.name + ": ";
      li.append(b, document.createTextNode(m.text));
      return li;
    }));
    $("messages").scrollTop = 1e9;
  }
  function leave(text) {
    if (state.phase === "left") return;
    if (state.phase === "call" || state.phase === "lobby") send({ type: "leave" });
    state.phase = "left";
    clearInterval(reportTimer);
    if (state.pc) state.pc.close();
    if (state.local) state.local.getTracks().forEach((t) => t.stop());
    if (state.screen) { state.screen.onended = null; state.screen.stop(); state.screen = null; }
    if (state.ws) state.ws.close();
    show("call", false);
    show("prejoin", false);
    show("ended", true);
    $("ended-text").textContent = text;
  }

  // What a host did to me shows here as it is: muted (held until allowed, if the room says so),
  // video stopped — the local tracks follow, so the controls never claim otherwise. An update
  // that answers my own mute or camera toggle (one each, in order) is not the host's; nor is
  // one about something else (it may carry my state from before a request of mine still on its
  // way): a host's mute comes as `audioMuted`, a stop as `videoPaused` (or as I join).
  function followHost(me, change) {
    const kind = change === "audioMuted" || change === "audioUnmuted" ? "audio" : change === "videoPaused" || change === "videoResumed" ? "video" : null;
    if (kind && state.ownPending[kind] > 0) { state.ownPending[kind] -= 1; return; }
    const byHost = (c) => change === undefined || change === c;
    if (me.isAudioMuted && !state.muted && byHost("audioMuted")) {
      state.muted = true;
      if (state.local) state.local.getAudioTracks().forEach((t) => { t.enabled = false; });
      $("status").textContent = me.mutedByModerator ? "The host muted you. You can unmute when the host allows it." : "The host muted you.";
    }
    if (me.isVideoPaused && (!state.cameraOff || state.screen) && byHost("videoPaused")) {
      state.cameraOff = true;
      state.videoPausedAsked = true;
      if (state.local) state.local.getVideoTracks().forEach((t) => { t.enabled = false; });
      stopScreenShare();
      $("status").textContent = "The host stopped your video.";
    }
    if (!me.mutedByModerator && state.heldByHost) $("status").textContent = "The host allows you to unmute.";
    state.heldByHost = !!me.mutedByModerator;
  }

  // ---- Sharing my screen ---------------------------------------------------------------------
  // The screen goes out as my video, on the same sender (no renegotiation; one added when I
  // joined with audio only): terminals show it in my tile, marked as sharing, and pages show it
  // whole. `setPresenting` tells the room; my video is unpaused for it and paused again after
  // if my camera was off.
  async function startScreenShare() {
    let display;
    try {
      display = await navigator.mediaDevices.getDisplayMedia({ video: { frameRate: { max: 15 } }, audio: false });
    } catch (e) {
      if (e.name !== "NotAllowedError" && e.name !== "AbortError") notice("Your screen could not be shared: " + e.message, true);
      return;
    }
    const track = display.getVideoTracks()[0];
    if (!track || state.phase !== "call" || state.screen) { display.getTracks().forEach((t) => t.stop()); return; }
    track.contentHint = "detail";
    track.onended = () => stopScreenShare();  // (the browser's own "Stop sharing")
    state.screen = track;
    state.screenStream = new MediaStream([track]);
    try {
      if (state.videoSender) {
        await state.videoSender.replaceTrack(track);
      } else if (state.pc) {
        state.videoSender = state.pc.addTransceiver(track, { direction: "sendonly" }).sender;
        negotiate();
      }
    } catch (e) {
      state.screen = null;
      track.onended = null;
      track.stop();
      notice("Your screen could not be shared: " + e.message, true);
      render();
      return;
    }
    askVideoPaused(false);
    send({ type: "setPresenting", value: true });
    render();
  }
  async function stopScreenShare() {
    const track = state.screen;
    if (!track) return;
    state.screen = null;
    track.onended = null;
    track.stop();
    if (state.phase !== "call") return;
    const camera = state.local && state.local.getVideoTracks()[0];
    if (state.videoSender) await state.videoSender.replaceTrack(camera || null).catch(() => { /* closed: nothing to send */ });
    send({ type: "setPresenting", value: false });
    askVideoPaused(state.cameraOff || !camera);
    render();
  }
  function askVideoPaused(value) {
    if (value === state.videoPausedAsked) return;
    state.videoPausedAsked = value;
    state.ownPending.video += 1;
    send({ type: "setVideoPaused", value });
  }

  // ---- Controls ------------------------------------------------------------------------------
  $("join").onclick = () => join(true);
  $("join-audio").onclick = () => join(false);
  $("mic").onchange = $("camera").onchange = () => openDevices();
  $("mute").onclick = () => {
    if (state.muted && state.heldByHost) return;
    state.muted = !state.muted;
    if (state.local) state.local.getAudioTracks().forEach((t) => { t.enabled = !state.muted; });
    state.ownPending.audio += 1;
    send({ type: "setAudioMuted", value: state.muted });
    render();
  };
  $("camera-toggle").onclick = () => {
    state.cameraOff = !state.cameraOff;
    if (state.local) state.local.getVideoTracks().forEach((t) => { t.enabled = !state.cameraOff; });
    askVideoPaused(state.cameraOff);
    render();
  };
  $("share-screen").onclick = () => (state.screen ? stopScreenShare() : startScreenShare());
  show("share-screen", !!(navigator.mediaDevices && navigator.mediaDevices.getDisplayMedia));  // (not on phones)
  $("hand").onclick = () => { state.hand = !state.hand; send({ type: "setHandRaised", value: state.hand }); render(); };
  $("leave").onclick = () => leave("You left the call.");
  $("cc").onclick = () => { state.showCaptions = !state.showCaptions; render(); renderCaptions(); };
  $("lock").onclick = () => send({ type: "setRoomLocked", value: !state.locked });
  $("panel-people").onclick = () => { show("side", true); show("people-panel", true); show("chat-panel", false); };
  $("panel-chat").onclick = () => { show("side", true); show("chat-panel", true); show("people-panel", false); state.unread = 0; renderChat(); };
  for (const b of document.querySelectorAll("[data-close]")) b.onclick = () => show("side", false);
  $("chat-form").onsubmit = (e) => {
    e.preventDefault();
    const text = $("chat-text").value.trim();
    if (text) send({ type: "chat", text });
    $("chat-text").value = "";
  };
  $("copy-link").onclick = async () => {
    const link = state.inviteLink || location.origin + location.pathname + location.search;  // (never a fragment)
    try { await navigator.clipboard.writeText(link); $("status").textContent = "Invite link copied."; } catch (e) { prompt("The invite link:", link); }
  };
  window.addEventListener("pagehide", () => { if (state.phase === "call") send({ type: "leave" }); });

  if (!window.RTCPeerConnection || !navigator.mediaDevices) {
    notice("This browser cannot make calls (no WebRTC). Use a current Chromium, Chrome, Edge, Firefox or Safari.", true);
  } else if (page.invite || authToken) {
    state.devicesReady = openDevices();
  } else {
    notice("This link has no invite in it. Ask for an invite link (it ends in ?invite=…), or join from a terminal below.", true);
  }
})();

import CallsWebRTC
import CallsRelay
import CallsStore
/// Renders the server's counters in the Prometheus text exposition format (`GET /metrics`).
/// Contains counts only: no ids, keys or tokens.
struct MetricsReport {
    private var lines: [String] = []

    mutating func gauge(_ name: String, _ help: String, _ value: Int) { gauge(name, help, [("", value)]) }

    mutating func gauge(_ name: String, _ help: String, _ values: [(labels: String, value: Int)]) {
        lines += ["# HELP \(name) \(help)", "# TYPE \(name) gauge"]
        for v in values { lines.append("\(name)\(v.labels.isEmpty ? "" : "{\(v.labels)}") \(v.value)") }
    }

    mutating func counter(_ name: String, _ help: String, _ values: [(labels: String, value: UInt64)]) {
        lines += ["# HELP \(name) \(help)", "# TYPE \(name) counter"]
        for v in values { lines.append("\(name)\(v.labels.isEmpty ? "" : "{\(v.labels)}") \(v.value)") }
    }

    mutating func counter(_ name: String, _ help: String, _ value: UInt64) { counter(name, help, [("", value)]) }

    var text: String { lines.joined(separator: "\n") + "\n" }

    static func render(rooms: Int, participants: Int, connections: Int, relay: RelayCounters, store: StoreMetrics,
                       httpRequests: UInt64, webhooks: WebhookCounters? = nil, push: PushCounters? = nil,
                       refusals: [(String, UInt64)] = [], webrtc: WebRTCGateway? = nil,
                       objects: (counters: ObjectUploader.Counters, queue: [StoredObject.State: Int])? = nil) -> String {
        var r = MetricsReport()
        r.gauge("callroom_rooms", "Rooms with at least one participant.", rooms)
        r.gauge("callroom_participants", "Participants in all rooms.", participants)
        r.gauge("callroom_signalling_connections", "Open signalling WebSocket connections.", connections)
        r.counter("callroom_http_requests_total", "REST requests answered.", httpRequests)
        r.counter("callroom_relay_packets_received_total", "UDP datagrams received by the relay.", relay.received.load(ordering: .relaxed))
        r.counter("callroom_relay_worker_packets_received_total", "UDP datagrams received by each relay worker.",
                  relay.receivedPerWorker.enumerated().map { ("worker=\"\($0.offset)\"", $0.element) })
        r.counter("callroom_relay_bytes_received_total", "UDP bytes received by the relay.", relay.receivedBytes.load(ordering: .relaxed))
        r.counter("callroom_relay_packets_forwarded_total", "RTP packets sent by the relay.", relay.forwarded.load(ordering: .relaxed))
        r.counter("callroom_relay_bytes_forwarded_total", "RTP bytes sent by the relay.", relay.forwardedBytes.load(ordering: .relaxed))
        r.counter("callroom_relay_binds_total", "Accepted media bind datagrams.", relay.binds.load(ordering: .relaxed))
        r.counter("callroom_relay_packets_dropped_total", "Datagrams the relay dropped, by reason.", [
            ("reason=\"unbound\"", relay.droppedUnbound.load(ordering: .relaxed)),
            ("reason=\"malformed\"", relay.droppedMalformed.load(ordering: .relaxed)),
            ("reason=\"bad_bind\"", relay.droppedBadBind.load(ordering: .relaxed)),
            ("reason=\"ssrc_mismatch\"", relay.droppedSSRCMismatch.load(ordering: .relaxed)),
            ("reason=\"send_failed\"", relay.droppedSendFailed.load(ordering: .relaxed)),
            ("reason=\"bind_rate_limited\"", relay.droppedBindRateLimited.load(ordering: .relaxed)),
            ("reason=\"stale\"", relay.droppedStale.load(ordering: .relaxed)),
            ("reason=\"muted\"", relay.droppedMuted.load(ordering: .relaxed)),
            ("reason=\"video_paused\"", relay.droppedVideoPaused.load(ordering: .relaxed)),
            ("reason=\"bad_consent\"", relay.droppedBadConsent.load(ordering: .relaxed)),
            ("reason=\"rate_limited\"", relay.droppedRateLimited.load(ordering: .relaxed)),
        ])
        r.counter("callroom_relay_tunnelled_packets_total", "Media over signalling (UDP blocked): packets received that way, and copies sent that way.", [
            ("direction=\"in\"", relay.tunnelled.load(ordering: .relaxed)),
            ("direction=\"out\"", relay.tunnelledOut.load(ordering: .relaxed)),
        ])
        r.counter("callroom_relay_video_copies_total", "Video packet copies: forwarded to subscribers, withheld from members not showing the sender.", [
            ("outcome=\"forwarded\"", relay.videoForwarded.load(ordering: .relaxed)),
            ("outcome=\"withheld\"", relay.videoWithheld.load(ordering: .relaxed)),
        ])
        r.counter("callroom_relay_consent_expired_total", "Bound addresses unbound because they stopped answering consent challenges.",
                  relay.consentExpired.load(ordering: .relaxed))
        r.counter("callroom_relay_fastpath_packets_forwarded_total", "RTP packets the kernel fast path forwarded (included in the forwarded total).",
                  relay.fastPathForwarded.load(ordering: .relaxed))
        r.lines += [
            "# HELP callroom_relay_fastpath_run_seconds_total CPU time the kernel fast path's program ran (0 without run-time stats).",
            "# TYPE callroom_relay_fastpath_run_seconds_total counter",
            "callroom_relay_fastpath_run_seconds_total \(Double(relay.fastPathRunNanoseconds.load(ordering: .relaxed)) / 1e9)",
        ]
        r.counter("callroom_dominant_speaker_changes_total", "Dominant speaker changes across rooms.",
                  relay.dominantSpeakerChanges.load(ordering: .relaxed))
        let ops = store.operations.load(ordering: .relaxed)
        r.counter("callroom_store_operations_total", "Store operations.", ops)
        r.counter("callroom_store_failures_total", "Store operations that failed.", store.failures.load(ordering: .relaxed))
        r.counter("callroom_store_write_batches_total", "Transactions the store writer committed.", store.batches.load(ordering: .relaxed))
        r.counter("callroom_store_write_requests_total", "Room writes committed in those batches.", store.batchedRequests.load(ordering: .relaxed))
        r.counter("callroom_store_write_failures_total", "Room writes that failed (reported to the room, never swallowed).",
                  store.requestFailures.load(ordering: .relaxed))
        r.lines += [
            "# HELP callroom_store_latency_seconds Store operation latency, lock wait included.",
            "# TYPE callroom_store_latency_seconds summary",
            "callroom_store_latency_seconds_sum \(Double(store.totalMicroseconds.load(ordering: .relaxed)) / 1e6)",
            "callroom_store_latency_seconds_count \(ops)",
            "# HELP callroom_store_latency_max_seconds Slowest store operation since start.",
            "# TYPE callroom_store_latency_max_seconds gauge",
            "callroom_store_latency_max_seconds \(Double(store.maxMicroseconds.load(ordering: .relaxed)) / 1e6)",
        ]
        if let w = webhooks {
            r.counter("callroom_webhook_deliveries_total", "Webhook deliveries acknowledged (2xx).", w.delivered.load(ordering: .relaxed))
            r.counter("callroom_webhook_failed_attempts_total", "Webhook attempts that failed (non-2xx, timeout, unreachable).",
                      w.failedAttempts.load(ordering: .relaxed))
            r.counter("callroom_webhook_dead_letters_total", "Webhook deliveries given up after the last attempt.", w.deadLettered.load(ordering: .relaxed))
            r.counter("callroom_webhook_dropped_total", "Undelivered webhook events dropped because the webhook's queue was full.",
                      w.dropped.load(ordering: .relaxed))
        }
        if !refusals.isEmpty {
            r.counter("callroom_refused_total", "Requests refused, by cause (auth, rate limits, room rules, moderation, idle or excess connections).",
                      refusals.map { ("cause=\"\($0.0)\"", $0.1) })
        }
        if let p = push {
            r.counter("callroom_push_sent_total", "Pushes the push service accepted, by service.",
                      [("service=\"apns\"", p.sentAPNs.load(ordering: .relaxed)), ("service=\"fcm\"", p.sentFCM.load(ordering: .relaxed))])
            r.counter("callroom_push_failed_total", "Pushes refused for good (bad token, bad request, not configured).", p.failed.load(ordering: .relaxed))
            r.counter("callroom_push_retries_total", "Push attempts to be retried (throttled, service down, timeout).", p.retried.load(ordering: .relaxed))
            r.counter("callroom_push_expired_total", "Pushes not sent within their 30 s lifetime.", p.expired.load(ordering: .relaxed))
            r.counter("callroom_push_tokens_purged_total", "Device tokens removed because the service said they are dead.",
                      p.tokensPurged.load(ordering: .relaxed))
        }
        if let (c, queue) = objects {
            r.counter("callroom_object_storage_operations_total",
                      "Object storage: files uploaded, objects deleted, attempts failed (retried with back-off), abandoned multipart uploads aborted.", [
                ("outcome=\"uploaded\"", c.uploaded.load(ordering: .relaxed)), ("outcome=\"deleted\"", c.deleted.load(ordering: .relaxed)),
                ("outcome=\"failed\"", c.failed.load(ordering: .relaxed)), ("outcome=\"aborted\"", c.aborted.load(ordering: .relaxed))])
            r.counter("callroom_object_storage_uploaded_bytes_total", "Bytes uploaded to object storage.", c.uploadedBytes.load(ordering: .relaxed))
            r.gauge("callroom_object_storage_queue", "Files in the object-storage queue, by state (upload: waiting; delete: to be removed).",
                    [StoredObject.State.upload, .stored, .delete].map { ("state=\"\($0.rawValue)\"", queue[$0] ?? 0) })
        }
        if let w = webrtc {
            let c = w.counters
            r.gauge("callroom_webrtc_legs", "Browsers' media legs through the WebRTC gateway.", w.legCount)
            r.counter("callroom_webrtc_datagrams_total", "Datagrams on the WebRTC port: received from browsers, sent to them.", [
                ("direction=\"in\"", c.received.load(ordering: .relaxed)), ("direction=\"out\"", c.sent.load(ordering: .relaxed))])
            r.counter("callroom_webrtc_packets_to_room_total", "Browsers' RTP re-protected and handed to the relay.", c.toRoom.load(ordering: .relaxed))
            r.counter("callroom_webrtc_stun_total", "ICE checks (STUN Binding requests): answered, refused.", [
                ("outcome=\"answered\"", c.stunAnswered.load(ordering: .relaxed)), ("outcome=\"refused\"", c.stunRefused.load(ordering: .relaxed))])
            r.counter("callroom_webrtc_address_checks_total",
                      "The server's own checks of browsers' addresses before media go there: sent (resends too), answered, given up.", [
                ("outcome=\"sent\"", c.addressChecksSent.load(ordering: .relaxed)),
                ("outcome=\"answered\"", c.addressChecksAnswered.load(ordering: .relaxed)),
                ("outcome=\"unanswered\"", c.addressChecksUnanswered.load(ordering: .relaxed))])
            r.counter("callroom_webrtc_consent_expired_total",
                      "Browser legs whose media stopped: their address answered no consent check for mediaConsentTimeoutMs.",
                      c.consentExpired.load(ordering: .relaxed))
            r.counter("callroom_webrtc_handshakes_total", "DTLS handshakes with browsers: done, failed.", [
                ("outcome=\"done\"", c.handshakes.load(ordering: .relaxed)), ("outcome=\"failed\"", c.handshakeFailures.load(ordering: .relaxed))])
            r.counter("callroom_webrtc_handshake_retransmits_total", "DTLS flights resent to browsers when their retransmission timer ran out.",
                      c.handshakeRetransmits.load(ordering: .relaxed))
            r.counter("callroom_webrtc_packets_dropped_total", "Packets a browser leg did not pass on, by reason.",
                      [("reason=\"unknown_source\"", c.unknownSource.load(ordering: .relaxed))]
                      + WebRTCPeer.Drop.allCases.map { ("reason=\"\($0.rawValue)\"", c.dropped[$0]?.value.load(ordering: .relaxed) ?? 0) })
        }
        return r.text
    }
}

import CVpx

/// A VP8 encoder (libvpx) in real-time mode: one pass, no look-ahead, constant bitrate, error
/// resilient (a lost frame costs its dependents until the next keyframe, never the decoder).
///
/// Thread rules: owned by one thread (the video sender's); not thread-safe. `setBitrate` and
/// `requestKeyframe` are called on that thread too (the sender applies requests between frames).
/// The libvpx context is owned and destroyed with the object.
public final class VP8Encoder {
    public struct Options: Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var fps: Int
        public var bitrateKbps: Int
        /// libvpx's speed/quality trade (VP8E_SET_CPUUSED, -16…16; higher is faster).
        public var cpuUsed: Int = 10
        /// A keyframe at least this often (seconds), besides those asked for.
        public var keyframeIntervalSeconds: Int = 10
        /// Screen content (text): sharper edges, fewer bits on static regions.
        public var screenContent = false
        public init(width: Int = 320, height: Int = 180, fps: Int = 15, bitrateKbps: Int = 250) {
            self.width = width
            self.height = height
            self.fps = fps
            self.bitrateKbps = bitrateKbps
        }
    }

    /// One compressed frame.
    public struct Encoded: Sendable, Equatable {
        public var data: [UInt8]
        public var isKeyframe: Bool
    }

    public let options: Options
    private let context: UnsafeMutablePointer<vpx_codec_ctx_t>
    private let image: UnsafeMutablePointer<vpx_image_t>
    private var config = vpx_codec_enc_cfg_t()
    private var pts: Int64 = 0
    public private(set) var bitrateKbps: Int

    public init(_ options: Options) throws(VideoError) {
        guard options.width > 0, options.height > 0, options.width % 2 == 0, options.height % 2 == 0 else {
            throw .codec("frame size \(options.width)x\(options.height) must be even and positive")
        }
        guard (1...60).contains(options.fps), options.bitrateKbps > 0 else { throw .codec("fps 1…60 and a positive bitrate") }
        self.options = options
        bitrateKbps = options.bitrateKbps
        guard callroom_vp8_enc_default(&config) == VPX_CODEC_OK else { throw .codec("no default configuration") }
        config.g_w = UInt32(options.width)
        config.g_h = UInt32(options.height)
        config.g_timebase = vpx_rational(num: 1, den: Int32(options.fps))
        config.rc_target_bitrate = UInt32(options.bitrateKbps)
        config.rc_end_usage = VPX_CBR
        config.g_lag_in_frames = 0
        config.g_threads = 1
        config.g_pass = VPX_RC_ONE_PASS
        config.g_error_resilient = vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT)
        config.rc_min_quantizer = 4
        config.rc_max_quantizer = 56
        config.rc_undershoot_pct = 100
        config.rc_overshoot_pct = 15
        config.rc_buf_initial_sz = 500
        config.rc_buf_optimal_sz = 600
        config.rc_buf_sz = 1000
        config.rc_dropframe_thresh = 0
        config.kf_mode = VPX_KF_AUTO
        config.kf_max_dist = UInt32(options.fps * options.keyframeIntervalSeconds)
        context = .allocate(capacity: 1)
        context.initialize(to: vpx_codec_ctx_t())
        image = .allocate(capacity: 1)
        image.initialize(to: vpx_image_t())
        let rc = callroom_vp8_enc_init(context, &config)
        guard rc == VPX_CODEC_OK else {
            context.deallocate()
            image.deallocate()
            throw .codec("vpx_codec_enc_init: \(String(cString: vpx_codec_err_to_string(rc)))")
        }
        _ = callroom_vp8_set_cpuused(context, Int32(options.cpuUsed))
        _ = callroom_vp8_set_static_threshold(context, 1)
        _ = callroom_vp8_set_max_intra(context, 300)  // a keyframe at most 3× an average frame
        if options.screenContent { _ = callroom_vp8_set_screen(context, 1) }
    }

    deinit {
        vpx_codec_destroy(context)
        context.deallocate()
        image.deallocate()
    }

    /// Changes the target bitrate (kb/s) from the next frame on.
    public func setBitrate(kbps: Int) {
        let k = max(30, kbps)
        guard k != bitrateKbps else { return }
        config.rc_target_bitrate = UInt32(k)
        if vpx_codec_enc_config_set(context, &config) == VPX_CODEC_OK { bitrateKbps = k }
    }

    /// Encodes one frame; `keyframe` forces a keyframe (a receiver asked, someone subscribed).
    /// Returns the compressed frame (nil when libvpx produced none for it).
    public func encode(_ frame: VideoFrame, keyframe: Bool = false) throws(VideoError) -> Encoded? {
        guard frame.width == options.width, frame.height == options.height else {
            throw .wrongSize(expected: "\(options.width)x\(options.height)", got: "\(frame.width)x\(frame.height)")
        }
        let flags: vpx_enc_frame_flags_t = keyframe ? vpx_enc_frame_flags_t(VPX_EFLAG_FORCE_KF) : 0
        let rc: vpx_codec_err_t = frame.bytes.withUnsafeBufferPointer { b in
            let p = UnsafeMutablePointer(mutating: b.baseAddress)
            guard vpx_img_wrap(image, VPX_IMG_FMT_I420, UInt32(frame.width), UInt32(frame.height), 1, p) != nil else { return VPX_CODEC_ERROR }
            return vpx_codec_encode(context, image, pts, 1, flags, UInt(VPX_DL_REALTIME))
        }
        pts += 1
        guard rc == VPX_CODEC_OK else { throw .codec("vpx_codec_encode: \(String(cString: vpx_codec_err_to_string(rc)))") }
        var out: Encoded?
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let f = packet.pointee.data.frame
            guard let buf = f.buf else { continue }
            let bytes = Array(UnsafeRawBufferPointer(start: buf, count: Int(f.sz)))
            let key = f.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY) != 0
            if var o = out { o.data += bytes; o.isKeyframe = o.isKeyframe || key; out = o } else { out = Encoded(data: bytes, isKeyframe: key) }
        }
        return out
    }
}

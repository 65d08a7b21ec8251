import CFFmpeg

/// FFmpeg as a whole, set up once per process.
enum MediaLibrary {
    /// FFmpeg says nothing on standard error: every problem comes back as an error.
    static let quiet: Void = av_log_set_level(AV_LOG_QUIET)

    static func quieten() { _ = quiet }
}

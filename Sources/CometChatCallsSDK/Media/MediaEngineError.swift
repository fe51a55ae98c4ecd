import CallsAudio
import CallsVideo

/// Why the media engine could not start.
enum MediaEngineError: Error, Sendable {
    case audio(AudioError)
    case video(VideoError)
    case network(String)
}

import Foundation
import TuttiAPI
import TuttiCore

/// Request bodies as the API reads them: JSON no deeper than `JSONNesting.maximumDepth`,
/// decoded into the endpoint's model, every number range-checked before it becomes a
/// command. No Hummingbird here, so that a fuzzer can drive it (bench/fuzz).
public enum RequestBody {
    /// Decodes a JSON body, saying what was wrong with it.
    public static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(ControlError) -> T {
        guard JSONNesting.isShallow(bytes) else {
            throw ControlError.badRequest("malformed request body: nested more than \(JSONNesting.maximumDepth) levels deep")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw ControlError.badRequest("malformed request body: \(describe(error))")
        } catch {
            throw ControlError.badRequest("malformed request body: \(error)")
        }
    }
}

extension SeekRequest {
    /// The seek, once its position is a time a track could have.
    public func command() throws(ControlError) -> TransportCommand {
        guard position.isFinite, position >= 0, position <= 1_000_000 else {
            throw ControlError.badRequest("position must be 0 to 1000000 seconds, not \(position)")
        }
        return .seek(to: MediaFrames(seconds: position))
    }
}

extension SkipRequest {
    /// The skip, once it is within a day either way.
    public func command() throws(ControlError) -> TransportCommand {
        guard seconds.isFinite, abs(seconds) <= 86_400 else { throw ControlError.badRequest("seconds must be within a day, not \(seconds)") }
        return .skip(by: MediaFrames(seconds: seconds))
    }
}

import Testing
@testable import TuttiControl
import TuttiCore

@Suite("Control API errors")
struct ControlErrorTests {
    @Test func domainErrorsMapToStatuses() {
        #expect(ControlError(TransportError.emptyQueue).status == 409)
        #expect(ControlError(TransportError.seekOutOfRange(requested: 10, duration: 5)).status == 400)
        #expect(ControlError(QueueError.noSuchItem(id: 3)).status == 404)
        #expect(ControlError(RoomError.nameTaken("Kitchen")).status == 409)
        #expect(ControlError(RoomError.noSuchRoom("Garage", known: [])).message.contains("Garage"))
    }
}

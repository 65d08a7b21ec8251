import Foundation
import Testing
import TuttiTesting
@testable import TuttiMedia

/// Cover art to a display's measure: a wide picture (ffmpeg's, red) in PNG and in JPEG comes
/// out at exactly the size asked, in the format asked (decoded again by FFmpeg), its middle
/// red and its bars black (letterboxed, as the reference server does); what is no picture,
/// or asks for no size, gives nothing.
@Suite("Cover art rendered for a display")
struct CoverRendererTests {
    static func picture(_ name: String) throws -> [UInt8] {
        let path = Scratch.folder + "/cover-\(name)"
        try MediaFixtures.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=red:s=400x200",
                               "-frames:v", "1", path])
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test(arguments: ["png", "jpg"]) func aWidePictureIsLetterboxedToTheSizeAsked(kind: String) throws {
        let source = try Self.picture("wide.\(kind)")
        for format in [CoverRenderer.Format.jpeg, .png] {
            let out = try #require(CoverRenderer.render(source, width: 100, height: 100, format: format))
            #expect(format == .jpeg ? out.starts(with: [0xFF, 0xD8]) : out.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            let image = try #require(CoverRenderer.pixels(out))
            #expect(image.width == 100 && image.height == 100)
            // 400×200 into 100×100: 100×50 in the middle, black above and below.
            func pixel(_ x: Int, _ y: Int) -> [Int] { (0..<3).map { Int(image.rgb[(y * 100 + x) * 3 + $0]) } }
            #expect(pixel(50, 50)[0] > 200 && pixel(50, 50)[1] < 60 && pixel(50, 50)[2] < 60, "\(pixel(50, 50))")
            #expect(pixel(50, 5).allSatisfy { $0 < 30 } && pixel(50, 95).allSatisfy { $0 < 30 }, "\(pixel(50, 5)) \(pixel(50, 95))")
        }
    }

    @Test func whatIsNoPictureGivesNothing() throws {
        #expect(CoverRenderer.render(Array("not a picture".utf8), width: 10, height: 10, format: .png) == nil)
        #expect(CoverRenderer.render([0xFF, 0xD8, 0xFF, 0x00, 0x01], width: 10, height: 10, format: .jpeg) == nil)
        #expect(CoverRenderer.render(try Self.picture("small.png"), width: 0, height: 10, format: .png) == nil)
        #expect(CoverRenderer.render([], width: 10, height: 10, format: .png) == nil)
    }
}

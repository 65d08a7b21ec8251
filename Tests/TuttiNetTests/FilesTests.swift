import Foundation
import Glibc
import Testing
@testable import TuttiNet

@Suite("Files through the fence")
struct FilesTests {
    private static func scratch() -> String {
        let dir = NSTemporaryDirectory() + "tutti-files-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        return dir
    }

    @Test func outputFileWritesAppendsAndPatches() throws {
        let dir = Self.scratch()
        try Files.makeFolders(dir + "/a/b", permissions: 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var info = stat()
        #expect(stat(dir + "/a/b", &info) == 0 && info.st_mode & 0o777 == 0o700)
        // Making them again is not an error.
        try Files.makeFolders(dir + "/a/b")
        let path = dir + "/a/b/trace.csv"
        do {
            let file = try OutputFile(creating: path)
            file.write("header\n")
            file.write([0x61, 0x62, 0x0A])
            file.write([0x48], at: 0)
            file.sync()
            #expect(file.failedWrites == 0)
        }
        #expect(Files.read(path).map { String(decoding: $0, as: UTF8.self) } == "Header\nab\n")
        // Created afresh: truncated.
        _ = try OutputFile(creating: path)
        #expect(Files.read(path) == [])
    }

    @Test func refusalsSayWhatAndWhere() throws {
        #expect(throws: SystemError.self) { try OutputFile(creating: "/nonexistent-folder/x") }
        #expect(Files.read("/nonexistent-folder/x") == nil)
        let dir = Self.scratch()
        try Files.makeFolders(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = try OutputFile(creating: dir + "/big")
        big.write([UInt8](repeating: 1, count: 10_000))
        #expect(Files.read(dir + "/big", limit: 4096) == nil)
        #expect(Files.read(dir + "/big")?.count == 10_000)
        do {
            try Files.makeFolders(dir + "/big/below")
            Issue.record("a folder under a file was made")
        } catch {
            #expect(error.description.contains("big/below"))
        }
    }

    @Test func folderOfAPath() {
        #expect(Files.folder(of: "/var/lib/tutti/state.json") == "/var/lib/tutti")
        #expect(Files.folder(of: "/state.json") == "/")
        #expect(Files.folder(of: "state.json") == ".")
        #expect(Files.folder(of: "a/b") == "a")
    }

    @Test func environmentAndHostName() {
        #expect(System.environment("PATH") != nil)
        #expect(System.environment("TUTTI_SURELY_UNSET_\(getpid())") == nil)
        #expect(!System.hostName().isEmpty)
    }

    /// A named pipe called like a cover or lyrics is refused at once (no writer would ever
    /// come), and a file larger than the limit before a byte is read.
    @Test func onlyRegularFilesWithinTheLimitAreRead() throws {
        let dir = Self.scratch()
        try Files.makeFolders(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkfifo(dir + "/cover.jpg", 0o600) == 0)
        let started = Date()
        #expect(Files.read(dir + "/cover.jpg") == nil)
        #expect(Date().timeIntervalSince(started) < 1)
        try Data(repeating: 7, count: 2_000).write(to: URL(fileURLWithPath: dir + "/big.lrc"))
        #expect(Files.read(dir + "/big.lrc", limit: 1_000) == nil)
        #expect(Files.read(dir + "/big.lrc", limit: 2_000)?.count == 2_000)
        #expect(Files.read(dir) == nil, "a folder")
    }

    /// Links within a music folder are followed; one out of it only when asked.
    @Test func aWalkFollowsLinksOutOfItsFolderOnlyWhenAsked() throws {
        let dir = Self.scratch()
        try Files.makeFolders(dir + "/music/album")
        try Files.makeFolders(dir + "/elsewhere")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for file in ["/music/album/a.mp3", "/elsewhere/secret.mp3"] {
            FileManager.default.createFile(atPath: dir + file, contents: Data([1]))
        }
        #expect(symlink(dir + "/elsewhere", dir + "/music/out") == 0)
        #expect(symlink("album", dir + "/music/again") == 0)
        #expect(symlink(dir + "/elsewhere/secret.mp3", dir + "/music/b.mp3") == 0)
        let inside = FolderWalk.walk(dir + "/music") { _ in true }
        #expect(inside.files.map { ($0.path as NSString).lastPathComponent }.sorted() == ["a.mp3"], "\(inside.files)")
        #expect(inside.linksOut.count == 2)
        let all = FolderWalk.walk(dir + "/music", outside: true) { _ in true }
        #expect(all.files.map { ($0.path as NSString).lastPathComponent }.sorted() == ["a.mp3", "b.mp3", "secret.mp3"])
    }
}

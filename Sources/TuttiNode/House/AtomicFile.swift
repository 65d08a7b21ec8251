import Foundation
import Glibc

/// Writes files atomically and durably: a temporary file beside the target, fsync, rename,
/// then fsync of the folder, so that after a crash the file is either the old one or the
/// new one, whole.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String, permissions: mode_t = 0o644) throws {
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions)
        guard fd >= 0 else { throw FileError(path: temporary, call: "open") }
        var ok = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok else {
            unlink(temporary)
            throw FileError(path: temporary, call: "write")
        }
        guard rename(temporary, path) == 0 else {
            let error = FileError(path: path, call: "rename")
            unlink(temporary)
            throw error
        }
        let folder = open((path as NSString).deletingLastPathComponent.isEmpty ? "." : (path as NSString).deletingLastPathComponent,
                          O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    public struct FileError: Error, CustomStringConvertible {
        public var path: String
        public var call: String
        public var code = errno
        public var description: String { "cannot save \(path): \(call) failed: \(String(cString: strerror(code)))" }
    }
}

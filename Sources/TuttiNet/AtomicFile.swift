import Foundation
import Glibc

/// Writes files atomically and durably: a temporary file beside the target, fsync, rename,
/// then fsync of the folder, so that after a crash the file is either the old one or the
/// new one, whole. Part of the system-call fence: a failure is a `SystemError` naming the
/// call and the file.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String, permissions: mode_t = 0o644) throws(SystemError) {
        let temporary = path + ".tmp-\(getpid())"
        let fd = try System.check("cannot save \(path): open \(temporary)", open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, permissions))
        // The bytes written, or the first failed write's errno.
        let failure: Int32? = data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += n
            }
            return fsync(fd) == 0 ? nil : errno
        }
        if let failure {
            close(fd)
            unlink(temporary)
            throw SystemError(call: "cannot save \(path): write", errno: failure)
        }
        close(fd)
        do {
            try System.check("cannot save \(path): rename", rename(temporary, path))
        } catch {
            unlink(temporary)
            throw error
        }
        let parent = (path as NSString).deletingLastPathComponent
        let folder = open(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }
}

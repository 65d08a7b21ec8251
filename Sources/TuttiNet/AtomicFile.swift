import FoundationEssentials
import Glibc

/// Writes files atomically and durably: a temporary file beside the target, fsync, rename,
/// then fsync of the folder, so that after a crash the file is either the old one or the
/// new one, whole. The temporary file has a random name and is made new (`O_EXCL`, never
/// through a link): a name another local user could guess and create first (in /tmp, say)
/// would let them read what is saved. Part of the system-call fence: a failure is a
/// `SystemError` naming the call and the file.
public enum AtomicFile {
    public static func write(_ data: Data, to path: String, permissions: mode_t = 0o644) throws(SystemError) {
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 {
            temporary = path + ".tmp-" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, permissions)
            if fd >= 0 || errno != EEXIST { break }
        }
        fd = try System.check("cannot save \(path): open \(temporary)", fd)
        // Exactly these permissions, whatever the umask.
        fchmod(fd, permissions)
        // The first failed write's errno, if any.
        let failure: Int32? = data.withUnsafeBytes { raw in
            System.writeAll(fd, raw) ?? (fsync(fd) == 0 ? nil : errno)
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
        let folder = open(Files.folder(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }
}

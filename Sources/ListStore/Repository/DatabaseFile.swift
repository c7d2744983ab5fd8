#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What is at a database path before SQLite is asked to open it, so that a path that
/// cannot hold a database fails with the reason in users' words rather than SQLite's
/// `disk I/O error` or `unable to open database file`.
///
/// Only `stat` and `access` are used: no descriptor of the file is opened (closing one
/// would drop the POSIX locks this process holds on it; see ``SQLiteMigrator``).
enum DatabaseFile {
  /// Whether a file is at `path`, refusing what no database can be.
  /// - Parameter path: The database file.
  /// - Returns: `true` for a regular file this process may read; `false` when nothing is
  ///   there (or a file stands where a folder of the path should be).
  /// - Throws: ``ListStoreError/cannotOpen(path:reason:)`` for a directory, a device or
  ///   another special file, or a file or folder this process may not read.
  static func exists(at path: String) throws(ListStoreError) -> Bool {
    var info = stat()
    guard stat(path, &info) == 0 else {
      switch errno {
      // Nothing there, or a file where a folder should be (creating reports that).
      case ENOENT, ENOTDIR: return false
      case EACCES:
        throw .cannotOpen(
          path: path, reason: "permission denied: a folder on the way may not be searched")
      default: throw .cannotOpen(path: path, reason: String(cString: strerror(errno)))
      }
    }
    switch info.st_mode & S_IFMT {
    case S_IFREG: break
    case S_IFDIR:
      throw .cannotOpen(
        path: path, reason: "it is a directory; give the path of a database file inside it")
    default:
      throw .cannotOpen(
        path: path,
        reason: "it is not a regular file (a device, pipe or socket) and cannot "
          + "hold a database")
    }
    guard access(path, R_OK) == 0 else {
      throw .cannotOpen(
        path: path,
        reason: "permission denied: this user may not read it (see its owner and "
          + "mode with 'ls -l')")
    }
    return true
  }

  /// Whether `path` is a folder (following symbolic links).
  static func isFolder(_ path: String) -> Bool {
    var info = stat()
    return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
  }
}

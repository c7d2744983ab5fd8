import FoundationEssentials
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension Repository {
  /// The path that opens a fresh, private database living as long as its repository:
  /// `Repository(path: Repository.inMemoryPath)`, or `":memory:"`.
  public static let inMemoryPath = ":memory:"
}

/// The database of a repository opened at ``Repository/inMemoryPath``: a real SQLite file
/// in a folder of its own — under `/dev/shm`, which is memory, where the system has it,
/// else in the temporary folder — so that it behaves exactly as a database file does
/// (its writes are observed, other connections and processes may open it by its path),
/// removed with everything in it when the repository is released.
///
/// SQLite's own `:memory:` database exists only inside one connection, and the change
/// feed reads through connections of its own; a file is what all of them can open.
///
/// A repository that lives until the process exits (a global, say) is never released:
/// its folder is removed when the process exits normally. The folder's name carries the
/// process id, and the folders of processes that are gone (killed, crashed) are removed
/// by the next process that makes one.
package final class InMemoryDatabase: Sendable {
  /// The folder holding the database, its WAL and shared-memory files.
  let folder: String
  /// The database file.
  var path: String { folder + "/memory.sqlite" }

  /// The start of every such folder's name, followed by the process id and a dash.
  static let prefix = "liststore-memory-"

  /// Creates the folder.
  /// - Throws: ``ListStoreError/cannotCreateFolder(path:reason:)`` when no temporary folder
  ///   can be written.
  init() throws(ListStoreError) {
    var bases = ["/dev/shm"]
    let temporary = FileManager.default.temporaryDirectory.path
    if !temporary.isEmpty { bases.append(temporary) }
    bases.append("/tmp")
    _ = Self.cleanUpOnce
    var failure = "no temporary folder"
    for base in bases where access(base, W_OK | X_OK) == 0 {
      var template = Array((base + "/" + Self.prefix + "\(getpid())-XXXXXX").utf8CString)
      let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let start = buffer.baseAddress, mkdtemp(start) != nil else { return nil }
        return String(cString: start)
      }
      if let made {
        folder = made
        Self.live.withLock { _ = $0.insert(made) }
        return
      }
      failure = String(cString: strerror(errno))
    }
    throw .cannotCreateFolder(path: bases.last ?? "/tmp", reason: failure)
  }

  deinit {
    // Connections still open (the change feed's, released after the repository) keep
    // working on the removed files until they close; nothing opens them again.
    Self.live.withLock { _ = $0.remove(folder) }
    try? FileManager.default.removeItem(atPath: folder)
  }

  /// The folders of this process's repositories that are still open.
  private static let live = Locked<Set<String>>([])

  /// Run once per process: removes the folders of processes that are gone, and arranges
  /// for this process's folders to be removed when it exits.
  private static let cleanUpOnce: Void = {
    for base in ["/dev/shm", FileManager.default.temporaryDirectory.path, "/tmp"] {
      removeFoldersOfGoneProcesses(in: base)
    }
    atexit {
      for folder in InMemoryDatabase.live.withLock({ $0 }) {
        try? FileManager.default.removeItem(atPath: folder)
      }
    }
  }()

  /// Removes the in-memory folders in `base` whose process no longer exists.
  private static func removeFoldersOfGoneProcesses(in base: String) {
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: base) else { return }
    for name in names where name.hasPrefix(prefix) {
      guard let pid = Int32(name.dropFirst(prefix.count).prefix { $0 != "-" }), pid > 0
      else { continue }
      // Only a process that certainly does not exist: not one of another user (EPERM).
      if kill(pid, 0) == -1 && errno == ESRCH {
        try? FileManager.default.removeItem(atPath: base + "/" + name)
      }
    }
  }
}

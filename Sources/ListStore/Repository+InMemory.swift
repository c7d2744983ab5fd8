import FoundationEssentials

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
package final class InMemoryDatabase: Sendable {
  /// The folder holding the database, its WAL and shared-memory files.
  let folder: String
  /// The database file.
  var path: String { folder + "/memory.sqlite" }

  /// Creates the folder.
  /// - Throws: ``ListStoreError/cannotCreateFolder(path:reason:)`` when no temporary folder
  ///   can be written.
  init() throws(ListStoreError) {
    var bases = ["/dev/shm"]
    let temporary = FileManager.default.temporaryDirectory.path
    if !temporary.isEmpty { bases.append(temporary) }
    bases.append("/tmp")
    var failure = "no temporary folder"
    for base in bases where access(base, W_OK | X_OK) == 0 {
      var template = Array((base + "/liststore-memory-XXXXXX").utf8CString)
      let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
        guard let start = buffer.baseAddress, mkdtemp(start) != nil else { return nil }
        return String(cString: start)
      }
      if let made {
        folder = made
        return
      }
      failure = String(cString: strerror(errno))
    }
    throw .cannotCreateFolder(path: bases.last ?? "/tmp", reason: failure)
  }

  deinit {
    // Connections still open (the change feed's, released after the repository) keep
    // working on the removed files until they close; nothing opens them again.
    try? FileManager.default.removeItem(atPath: folder)
  }
}

import ListStore
import ListStoreFormats
import ListStorePostgreSQL

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Text written to standard output or standard error, held back until the command
/// succeeds (a failing command prints nothing on standard output) or until a
/// streaming command flushes it.
final class Output {
  private let descriptor: Int32
  private var buffer: [UInt8] = []

  init(descriptor: Int32) { self.descriptor = descriptor }

  static func standardOutput() -> Output { Output(descriptor: STDOUT_FILENO) }
  static func standardError() -> Output { Output(descriptor: STDERR_FILENO) }

  /// Appends `text` and a line break.
  func line(_ text: String = "") {
    buffer.append(contentsOf: text.utf8)
    buffer.append(0x0A)
  }

  /// Writes what is buffered.
  func flush() {
    guard !buffer.isEmpty else { return }
    buffer.withUnsafeBytes { bytes in
      var offset = 0
      while offset < bytes.count {
        let written = write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { break }  // A closed pipe: nobody is reading any more.
        offset += written
      }
    }
    buffer.removeAll(keepingCapacity: true)
  }

  /// Forgets what is buffered.
  func discard() { buffer.removeAll() }
}

/// A command that could not be carried out, for reasons that are not the store's
/// (``ListStoreError``) nor the command line's (``UsageError``): status 1.
struct CommandError: Error, CustomStringConvertible {
  /// What went wrong, and what to do.
  var description: String

  init(_ description: String) { self.description = description }
}

/// What a command runs with: the database it works on and where it prints.
final class Context {
  let environment: [String: String]
  let databasePath: String
  /// Whether the command may create the database when it is missing.
  let databaseUse: DatabaseUse
  let out: Output
  let err: Output
  private var openedRepository: Repository?

  init(
    environment: [String: String], databasePath: String?, databaseUse: DatabaseUse, out: Output,
    err: Output
  ) {
    self.environment = environment
    self.databasePath = databasePath ?? Repository.defaultPath(environment: environment)
    self.databaseUse = databaseUse
    self.out = out
    self.err = err
  }

  /// The repository, opened (and migrated, and for commands that write, created) on first
  /// use, so that help and usage errors never touch the database.
  func repository() throws(ListStoreError) -> Repository {
    if let openedRepository { return openedRepository }
    // Seconds a write waits for another writer's lock (default 10).
    var busyTimeout = Duration.seconds(10)
    if let seconds = environment["LISTSTORE_BUSY_TIMEOUT"].flatMap(Double.init), seconds >= 0,
      seconds < 1e6
    {
      busyTimeout = .milliseconds(Int(seconds * 1000))
    }
    let repository: Repository
    if Repository.isPostgreSQLLocation(databasePath) {
      repository = try Repository(
        url: databasePath, busyTimeout: busyTimeout, createIfMissing: databaseUse == .writes)
    } else {
      repository = try Repository(
        path: databasePath, busyTimeout: busyTimeout, readOnly: false,
        createIfMissing: databaseUse == .writes,
        maximumPageCount: environment["LISTSTORE_MAX_PAGE_COUNT"].flatMap { Int($0) })
    }
    openedRepository = repository
    return repository
  }

  /// The list named `name`, with values and metadata as raw JSON.
  func list(_ name: String) throws(ListStoreError) -> StoredList<RawJSON, RawJSON> {
    try repository().list(name, metadata: RawJSON.self, item: RawJSON.self)
  }
}

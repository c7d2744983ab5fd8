import ListStore
import ListStoreClient
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
  /// The exit status (1 unless the command documents another).
  var status: Int32 = 1

  init(_ description: String, status: Int32 = 1) {
    self.description = description
    self.status = status
  }
}

/// What a command runs with: the database it works on and where it prints.
final class Context {
  let environment: [String: String]
  let databasePath: String
  /// Whether the location came from `--db` (else from `LISTSTORE_DB` or the default).
  let databasePathGiven: Bool
  /// Whether the command may create the database when it is missing.
  let databaseUse: DatabaseUse
  let out: Output
  let err: Output
  /// `--token`, for a server.
  let token: String?

  /// The token for a server: `--token`, else `$LISTSTORE_TOKEN`; `nil` for none.
  var serverToken: String? {
    (token ?? environment["LISTSTORE_TOKEN"]).flatMap { $0.isEmpty ? nil : $0 }
  }
  private var openedRepository: Repository?
  private var openedRemote: RemoteRepository?

  init(
    environment: [String: String], databasePath: String?, databaseUse: DatabaseUse, out: Output,
    err: Output, token: String? = nil
  ) {
    self.environment = environment
    self.databasePath = databasePath ?? Repository.defaultPath(environment: environment)
    databasePathGiven = databasePath != nil
    self.databaseUse = databaseUse
    self.out = out
    self.err = err
    self.token = token
  }

  /// Whether the location is a server (`http://…` or `https://…`) rather than a database.
  var isRemote: Bool { RemoteRepository.isRemoteLocation(databasePath) }

  /// The server, with the token of `--token` or `$LISTSTORE_TOKEN`, and the authorities
  /// of `$LISTSTORE_CA_FILE` for a self-signed `https://` server.
  func remote() throws -> RemoteRepository {
    if let openedRemote { return openedRemote }
    let remote = try RemoteRepository(
      url: databasePath, token: token ?? environment["LISTSTORE_TOKEN"],
      certificateAuthorities: environment["LISTSTORE_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
    openedRemote = remote
    return remote
  }

  /// The repository, opened (and migrated, and for commands that create a list,
  /// created) on first use, so that help and usage errors never touch the database.
  func repository() throws -> Repository {
    if let openedRepository { return openedRepository }
    let busyTimeout = Duration.milliseconds(
      Int(try seconds("LISTSTORE_BUSY_TIMEOUT", default: 10, upTo: 1_000_000) * 1000))
    let repository: Repository
    if Repository.isPostgreSQLLocation(databasePath) {
      repository = try Repository(
        url: databasePath, busyTimeout: busyTimeout, createIfMissing: databaseUse == .writes)
    } else {
      repository = try Repository(
        path: databasePath, busyTimeout: busyTimeout, readOnly: false,
        createIfMissing: databaseUse == .writes,
        maximumPageCount: try maximumPageCount())
    }
    openedRepository = repository
    return repository
  }

  /// Checks the settings the environment gives (`LISTSTORE_BUSY_TIMEOUT`,
  /// `LISTSTORE_PROGRESS_DELAY`, `LISTSTORE_MAX_PAGE_COUNT`) before a command runs, so
  /// that a mistyped one is an error rather than silently the default.
  func checkEnvironment() throws {
    if let problem = Repository.locationProblem(databasePath) {
      let source = databasePathGiven ? "--db" : "LISTSTORE_DB"
      throw UsageError(message: "\(source): \(problem)", command: nil)
    }
    _ = try seconds("LISTSTORE_BUSY_TIMEOUT", default: 10, upTo: 1_000_000)
    _ = try progressDelay()
    _ = try maximumPageCount()
  }

  /// `LISTSTORE_PROGRESS_DELAY`: seconds of work after which a progress line appears.
  func progressDelay() throws -> Double {
    try seconds("LISTSTORE_PROGRESS_DELAY", default: 1, upTo: 3600)
  }

  /// A number of seconds from the environment variable `name`: `fallback` when it is
  /// unset or empty, else a number from 0 to `limit`.
  /// - Throws: ``CommandError`` naming the variable when it holds anything else.
  func seconds(_ name: String, default fallback: Double, upTo limit: Double) throws -> Double {
    guard let text = environment[name], !text.isEmpty else { return fallback }
    guard let value = Double(text), value >= 0, value <= limit else {
      throw CommandError(
        "\(name) must be a number of seconds from 0 to \(Int(limit)), not \"\(text)\"; "
          + "unset it for the default (\(Int(fallback)))")
    }
    return value
  }

  /// `LISTSTORE_MAX_PAGE_COUNT`, a size limit in pages (for testing a full disk).
  private func maximumPageCount() throws -> Int? {
    guard let text = environment["LISTSTORE_MAX_PAGE_COUNT"], !text.isEmpty else { return nil }
    guard let pages = Int(text), pages > 0 else {
      throw CommandError(
        "LISTSTORE_MAX_PAGE_COUNT must be a positive number of pages, not \"\(text)\"")
    }
    return pages
  }

  /// The names of the lists, from the database or the server.
  func listNames() throws -> [String] {
    isRemote ? try remote().listsNow().map(\.name) : try repository().lists().map(\.name)
  }

  /// The list named `name`, with values and metadata as raw JSON.
  func list(_ name: String) throws -> StoredList<RawJSON, RawJSON> {
    try repository().list(name, metadata: RawJSON.self, item: RawJSON.self)
  }
}

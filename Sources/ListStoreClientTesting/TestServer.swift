import Dispatch
public import ListStore
public import ListStoreServer
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A throwaway `liststore serve` for tests: a server in this process, on a free loopback
/// port, over a fresh SQLite database in a temporary folder, which ``remove()`` deletes.
///
/// ```swift
/// let server = try TestServer()
/// defer { server.remove() }
/// let remote = try RemoteRepository(url: server.url)
/// try server.repository.createList("cities")  // the same database, written directly
/// ```
///
/// ``stop()`` and ``start()`` take the server down and up again on the same port, to test
/// what a client does when its connection drops; ``repository`` reaches the database
/// meanwhile, as another process would. The server needs libevent (`libevent-2.1-7`).
public final class TestServer: Sendable {
  /// The database, opened directly: writes here reach the server's streams as any other
  /// client's do.
  public let repository: Repository
  /// The database file.
  public let databasePath: String
  private let folder: String
  private let state:
    Mutex<
      (server: ListServer?, port: Int, done: DispatchSemaphore?, tokens: Tokens?)
    >

  /// Makes a database and starts serving it.
  ///
  /// - Parameter tokens: The tokens to require (`nil`: none).
  /// - Throws: ``ServerError`` when libevent is missing or no port can be bound, or a
  ///   ``ListStoreError`` when the database cannot be made.
  public init(tokens: Tokens? = nil) throws {
    var template = Array("/tmp/liststore-test-server-XXXXXX".utf8CString)
    guard
      let made = template.withUnsafeMutableBufferPointer({ buffer in
        buffer.baseAddress.flatMap { mkdtemp($0) }.map { String(cString: $0) }
      })
    else {
      throw ListStoreError.cannotCreateFolder(
        path: "/tmp/liststore-test-server-…", reason: String(cString: strerror(errno)))
    }
    folder = made
    databasePath = made + "/served.sqlite"
    repository = try Repository(path: databasePath)
    state = Mutex((nil, 0, nil, tokens))
    try start()
  }

  /// The server's address, `http://127.0.0.1:PORT`.
  public var url: String { "http://127.0.0.1:\(state.withLock { $0.port })" }

  /// The tokens the server requires, if any.
  public var tokens: Tokens? { state.withLock { $0.tokens } }

  /// Serves (again, on the same port after ``stop()``).
  ///
  /// - Parameter tokens: Other tokens to require from now on, if given.
  /// - Throws: ``ServerError`` when the port cannot be bound.
  public func start(tokens: Tokens? = nil) throws(ServerError) {
    var configuration = ListServer.Configuration()
    configuration.port = state.withLock { $0.port }
    configuration.tokens = tokens ?? self.tokens
    let server = try ListServer(repository: repository, configuration: configuration)
    let done = DispatchSemaphore(value: 0)
    state.withLock { $0 = (server, server.port, done, configuration.tokens) }
    DispatchQueue(label: "liststore.test-server").async {
      server.run()
      done.signal()
    }
  }

  /// Stops serving: open streams end and their connections close; the port stays this
  /// server's for ``start()``.
  public func stop() {
    let (server, done) = state.withLock { state -> (ListServer?, DispatchSemaphore?) in
      defer {
        state.server = nil
        state.done = nil
      }
      return (state.server, state.done)
    }
    guard let server else { return }
    server.stop()
    done?.wait()
  }

  /// Stops serving and deletes the database with its folder.
  public func remove() {
    stop()
    for suffix in ["", "-wal", "-shm"] { unlink(databasePath + suffix) }
    rmdir(folder)
  }
}

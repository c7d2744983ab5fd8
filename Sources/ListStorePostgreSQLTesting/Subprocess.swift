import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Runs the PostgreSQL programs the test server needs, with `posix_spawn`, their
/// output appended to a log file, and no other descriptor of this process.
///
/// `pg_ctl start` leaves the server running with whatever it inherited. Foundation's
/// `Process` hands its children a descriptor whose closing tells it that the child
/// exited, and pipes of concurrent tests may be open too: a server that kept either
/// would make `Process` (or those tests' reads) wait until the server stops.
enum Subprocess {
  /// Runs `arguments` (program first) to completion, standard input from /dev/null and
  /// standard output and error appended to `log`.
  /// - Returns: The exit status (128 + signal number when a signal ended it).
  /// - Throws: ``TestPostgresServer/Failure`` when the program cannot be started.
  static func run(_ arguments: [String], log: String) throws -> Int32 {
    if let handle = FileHandle(forWritingAtPath: log) ?? createFile(log) {
      handle.seekToEndOfFile()
      handle.write(Data(("$ " + arguments.joined(separator: " ") + "\n").utf8))
      try? handle.close()
    }
    guard let pid = spawn(arguments, output: log) else {
      throw TestPostgresServer.Failure(
        "cannot start \(arguments.first ?? "nothing"): errno \(errno)")
    }
    return wait(for: pid)
  }

  private static func createFile(_ path: String) -> FileHandle? {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    return FileHandle(forWritingAtPath: path)
  }

  /// Runs `arguments` with output discarded and waits for it; safe in an `atexit`
  /// handler.
  static func runAtExit(_ arguments: [String]) {
    if let pid = spawn(arguments, output: "/dev/null") { _ = wait(for: pid) }
  }

  private static func spawn(_ arguments: [String], output: String) -> pid_t? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_APPEND | O_CREAT, 0o644)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    closeInheritedDescriptors(&actions)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    guard let program = argv.first ?? nil,
      posix_spawn(&pid, program, &actions, nil, argv, environ) == 0
    else { return nil }
    return pid
  }

  /// Adds actions that close every descriptor from 3 up in the child.
  private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    if let addCloseFrom {
      _ = addCloseFrom(&actions, 3)
      return
    }
    // Without glibc 2.34's closefrom action: close what is open now. A descriptor
    // another thread opens meanwhile may slip through.
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for descriptor in open.compactMap(Int32.init) where descriptor > 2 {
      posix_spawn_file_actions_addclose(&actions, descriptor)
    }
  }

  private typealias AddCloseFrom =
    @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32

  /// glibc's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module does
  /// not declare, looked up at run time.
  private static let addCloseFrom: AddCloseFrom? = {
    guard let program = dlopen(nil, RTLD_NOW),
      let symbol = dlsym(program, "posix_spawn_file_actions_addclosefrom_np")
    else { return nil }
    return unsafeBitCast(symbol, to: AddCloseFrom.self)
  }()

  private static func wait(for pid: pid_t) -> Int32 {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      guard errno == EINTR else { return -1 }
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift cannot import.
    let signal = status & 0x7F
    return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
  }

  /// The last `count` lines of a file, for error messages.
  static func tail(of path: String, lines count: Int = 20) -> String {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return "" }
    return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count)
      .joined(separator: "\n")
  }
}

#if canImport(Glibc)
  import Glibc
#endif

/// A child process started with `posix_spawn`.
struct Child {
  let pid: pid_t
  /// The read end of a pipe from the child's standard output, when captured.
  let output: Int32?

  /// Starts `path` with `arguments`; standard input is `/dev/null`, standard output is
  /// captured or sent to `/dev/null`, standard error is inherited unless `quiet`.
  static func spawn(
    _ path: String, _ arguments: [String], captureOutput: Bool = false, quiet: Bool = false
  ) throws -> Child {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    var pipeEnds: [Int32] = [-1, -1]
    if captureOutput {
      guard pipe(&pipeEnds) == 0 else { throw BenchError("pipe: \(errnoText())") }
      posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
      posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
      posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
    } else {
      posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    }
    if quiet { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }

    let argv = ([path] + arguments).map { strdup($0) }
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let status = posix_spawn(&pid, path, &actions, nil, argv + [nil], environ)
    if captureOutput { close(pipeEnds[1]) }
    guard status == 0 else {
      if captureOutput { close(pipeEnds[0]) }
      throw BenchError("cannot start \(path): \(String(cString: strerror(status)))")
    }
    return Child(pid: pid, output: captureOutput ? pipeEnds[0] : nil)
  }

  /// Waits for the child to end; returns what it printed (when captured).
  /// - Throws: When it did not exit with status 0.
  func wait() throws -> String {
    var bytes: [UInt8] = []
    if let output {
      var buffer = [UInt8](repeating: 0, count: 4096)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else { break }
        bytes.append(contentsOf: buffer[0..<count])
      }
      close(output)
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
      guard errno == EINTR else { throw BenchError("waitpid: \(errnoText())") }
    }
    // WIFEXITED / WEXITSTATUS, which Swift does not import.
    let exited = status & 0x7F == 0
    let code = (status >> 8) & 0xFF
    guard exited && code == 0 else {
      throw BenchError(
        exited
          ? "child \(pid) exited with status \(code)"
          : "child \(pid) died of signal \(status & 0x7F)")
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}

/// Runs a program to its end and returns the wall time from just before the spawn to
/// just after the wait, in seconds.
func wallTime(_ path: String, _ arguments: [String]) throws -> Double {
  let start = monotonicNanoseconds()
  let child = try Child.spawn(path, arguments)
  _ = try child.wait()
  return Double(monotonicNanoseconds() - start) / 1e9
}

/// Runs a program to its end and returns its standard output.
func output(of path: String, _ arguments: [String]) throws -> String {
  try Child.spawn(path, arguments, captureOutput: true, quiet: true).wait()
}

/// The path of the running executable.
func executablePath() -> String {
  var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
  let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
  guard count > 0 else { return CommandLine.arguments[0] }
  return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The process's peak resident set size (`VmHWM` of `/proc/self/status`), in bytes.
///
/// Not `getrusage`'s `ru_maxrss`: Linux carries that over `execve` from the address
/// space being replaced, which for a `posix_spawn`ed child is its parent's.
func peakResidentBytes() -> Int {
  statusKilobytes("VmHWM:") * 1024
}

/// A field of `/proc/PROCESS/status` in kilobytes (`VmRSS:`, `VmHWM:`), 0 when absent.
func statusKilobytes(_ field: String, process: String = "self") -> Int {
  guard let file = fopen("/proc/\(process)/status", "r") else { return 0 }
  defer { fclose(file) }
  var line: UnsafeMutablePointer<CChar>?
  var capacity = 0
  defer { free(line) }
  while getline(&line, &capacity, file) > 0, let line {
    let text = String(cString: line)
    if text.hasPrefix(field) {
      return Int(text.drop { !$0.isNumber }.prefix { $0.isNumber }) ?? 0
    }
  }
  return 0
}

/// Whether a file exists and may be executed.
func isExecutable(_ path: String) -> Bool {
  access(path, X_OK) == 0
}

func errnoText() -> String {
  String(cString: strerror(errno))
}

/// Writes `text` to standard error, unbuffered.
func printError(_ text: String) {
  var text = text
  text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}

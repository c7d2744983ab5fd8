import FoundationEssentials
import ReactiveCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Temporary folders named after the process that made them, so that what a killed process
/// left behind is removed by the next one: a test process that is killed (a timeout, a
/// crash, Ctrl-C) never runs its exit handlers.
package enum OwnedFolder {
  /// The prefixes whose leftovers this process has already swept.
  private static let swept = Locked<Set<String>>([])

  /// A new, empty folder `PREFIX-PID-XXXXXX` in `parent`. The first call for a prefix first
  /// removes that prefix's folders whose process is gone, calling `cleanUp` for each before
  /// (to stop a server it holds, say).
  /// - Parameters:
  ///   - prefix: The folder names' prefix.
  ///   - parent: The folder to make it in.
  ///   - cleanUp: Called with each leftover folder before it is removed.
  /// - Returns: The folder's path, or `nil` when it cannot be made (`errno` says why).
  package static func make(
    prefix: String, in parent: String, cleanUp: (String) -> Void = { _ in }
  ) -> String? {
    let first = swept.withLock { $0.insert(prefix + "@" + parent).inserted }
    if first { sweep(prefix: prefix, in: parent, cleanUp: cleanUp) }
    let parent = parent.hasSuffix("/") && parent.count > 1 ? String(parent.dropLast()) : parent
    var template = Array((parent + "/" + prefix + "-\(getpid())-XXXXXX").utf8CString)
    return template.withUnsafeMutableBufferPointer { buffer -> String? in
      guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
      return String(cString: base)
    }
  }

  /// Removes the folders `PREFIX-PID-…` of `parent` whose process `PID` no longer exists.
  static func sweep(prefix: String, in parent: String, cleanUp: (String) -> Void) {
    guard let directory = opendir(parent) else { return }
    var leftovers: [String] = []
    while let entry = readdir(directory) {
      let name = entryName(entry)
      guard name.hasPrefix(prefix + "-") else { continue }
      let rest = name.dropFirst(prefix.count + 1)
      guard let pid = Int32(rest.prefix { $0 != "-" }), pid > 0 else { continue }
      if kill(pid, 0) == -1 && errno == ESRCH { leftovers.append(parent + "/" + name) }
    }
    closedir(directory)
    for folder in leftovers {
      cleanUp(folder)
      removeTree(folder)
    }
  }

  /// The name of a directory entry, read where it lies. `readdir`'s entries are only as long
  /// as their name, while `dirent` declares `d_name` 256 bytes: copying the whole entry
  /// (`entry.pointee`) reads past the last entry of the buffer, off the end of its page
  /// when it is the last one there — the crash the README tests met now and then.
  static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
    withUnsafeMutablePointer(to: &entry.pointee.d_name) { name in
      UnsafeMutableRawPointer(name).withMemoryRebound(to: CChar.self, capacity: 1) {
        String(cString: $0)
      }
    }
  }

  /// Removes a folder and everything in it, making read-only entries writable first.
  package static func removeTree(_ path: String) {
    var info = stat()
    guard lstat(path, &info) == 0 else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
      chmod(path, info.st_mode | S_IRWXU)
      if let directory = opendir(path) {
        var names: [String] = []
        while let entry = readdir(directory) {
          let name = entryName(entry)
          if name != "." && name != ".." { names.append(name) }
        }
        closedir(directory)
        for name in names { removeTree(path + "/" + name) }
      }
      rmdir(path)
    } else {
      unlink(path)
    }
  }
}

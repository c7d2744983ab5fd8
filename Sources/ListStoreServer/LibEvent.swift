internal import CLibEvent

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// libevent, loaded with `dlopen` when a server starts rather than linked: programs that
/// never serve neither load it nor need it installed, and the package builds without
/// libevent's headers (``CLibEvent`` declares the few functions called).
enum LibEvent {
  /// The library `dlopen` loads: `$LISTSTORE_LIBEVENT` when set (a file name or path),
  /// otherwise libevent 2.1's versioned name.
  static var libraryName: String {
    if let name = getenv("LISTSTORE_LIBEVENT"), name.pointee != 0 { return String(cString: name) }
    #if canImport(Darwin)
      return "libevent-2.1.7.dylib"
    #else
      return "libevent-2.1.so.7"
    #endif
  }

  /// libevent's functions, or why they cannot be had; resolved once per process.
  static let functions: Result<LibEventFunctions, ServerError> = load(
    libraryName)

  /// Loads a library and resolves the functions the server calls from it; the library
  /// stays loaded for the rest of the process.
  /// - Parameter name: A file name or path, as `dlopen` takes it.
  /// - Returns: The functions, or an error saying which package to install.
  static func load(_ name: String) -> Result<LibEventFunctions, ServerError> {
    guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
      let reason = dlerror().map { String(cString: $0) } ?? "\(name) cannot be loaded"
      return .failure(missing(reason))
    }
    let table = UnsafeMutablePointer<LibEventFunctions>.allocate(capacity: 1)
    defer { table.deallocate() }
    if let function = liststore_libevent_resolve(library, table) {
      dlclose(library)
      return .failure(missing("\(name) has no \(String(cString: function))"))
    }
    return .success(table.move())
  }

  private static func missing(_ reason: String) -> ServerError {
    ServerError(
      "serving needs libevent's HTTP server: install libevent-2.1-7 "
        + "(apt install libevent-2.1-7); \(reason)")
  }
}

/// Why the server cannot start or go on, in words a person can act on.
public struct ServerError: Error, CustomStringConvertible, Sendable {
  /// What went wrong, and what to do.
  public var description: String

  init(_ description: String) { self.description = description }
}

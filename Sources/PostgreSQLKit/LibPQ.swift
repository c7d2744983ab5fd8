internal import CLibPQ

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// libpq, loaded with `dlopen` the first time a connection is opened rather than linked:
/// a program that never connects to PostgreSQL neither loads libpq and the libraries
/// it depends on (OpenSSL, Kerberos, LDAP, …) nor needs it installed.
enum LibPQ {
  /// The library `dlopen` loads: `$LISTSTORE_LIBPQ` when set (a file name or path),
  /// otherwise libpq's versioned name.
  static var libraryName: String {
    if let name = getenv("LISTSTORE_LIBPQ"), name.pointee != 0 { return String(cString: name) }
    #if canImport(Darwin)
      return "libpq.5.dylib"
    #else
      return "libpq.so.5"
    #endif
  }

  /// libpq's functions, or why they cannot be had; resolved once per process, on first
  /// use (a `static let` is initialised once, thread-safely).
  static let functions: Result<LibPQFunctions, PGError> = load(libraryName)

  /// Loads a library and resolves the libpq functions PostgreSQLKit calls from it.
  ///
  /// The library stays loaded for the rest of the process.
  /// - Parameter name: A file name or path, as `dlopen` takes it.
  /// - Returns: The functions, or a ``PGError`` (`.libraryMissing`) saying to install
  ///   libpq.
  static func load(_ name: String) -> Result<LibPQFunctions, PGError> {
    guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
      let reason = dlerror().map { String(cString: $0) } ?? "\(name) cannot be loaded"
      return .failure(missing(reason))
    }
    let table = UnsafeMutablePointer<LibPQFunctions>.allocate(capacity: 1)
    defer { table.deallocate() }
    if let function = liststore_libpq_resolve(library, table) {
      dlclose(library)
      return .failure(missing("\(name) has no \(String(cString: function))"))
    }
    return .success(table.move())
  }

  /// The error for a libpq that cannot be loaded, and why.
  private static func missing(_ reason: String) -> PGError {
    PGError(
      kind: .libraryMissing,
      message: "PostgreSQL needs libpq: install libpq5 (apt install libpq5); \(reason)")
  }
}

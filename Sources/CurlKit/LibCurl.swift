internal import CLibCurl

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// libcurl, loaded with `dlopen` when a program first speaks HTTP rather than linked:
/// programs that never do neither load it nor pay for it at start-up, and the package
/// builds without curl's headers (``CLibCurl`` declares the few functions called).
enum LibCurl {
  /// The library `dlopen` loads: `$LISTSTORE_LIBCURL` when set (a file name or path),
  /// otherwise libcurl 4's versioned name.
  static var libraryName: String {
    if let name = getenv("LISTSTORE_LIBCURL"), name.pointee != 0 { return String(cString: name) }
    #if canImport(Darwin)
      return "libcurl.4.dylib"
    #else
      return "libcurl.so.4"
    #endif
  }

  /// libcurl's functions, or why they cannot be had; resolved, and the library
  /// initialized, once per process.
  static let functions: Result<FunctionTable, HTTPClientError> = load(libraryName)

  /// Loads a library, resolves the functions CurlKit calls from it and initializes it;
  /// the library stays loaded for the rest of the process.
  /// - Parameter name: A file name or path, as `dlopen` takes it.
  /// - Returns: The functions, or an error saying which package to install.
  static func load(_ name: String) -> Result<FunctionTable, HTTPClientError> {
    guard let library = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
      let reason = dlerror().map { String(cString: $0) } ?? "\(name) cannot be loaded"
      return .failure(missing(reason))
    }
    let table = UnsafeMutablePointer<LibCurlFunctions>.allocate(capacity: 1)
    defer { table.deallocate() }
    if let function = liststore_libcurl_resolve(library, table) {
      dlclose(library)
      return .failure(missing("\(name) has no \(String(cString: function))"))
    }
    let functions = table.move()
    // Once, before any handle exists (which this static's one-time initialization
    // guarantees): curl_global_init is not thread-safe.
    let code = functions.curl_global_init(Int(LISTSTORE_CURL_GLOBAL_ALL))
    guard code == LISTSTORE_CURLE_OK else {
      return .failure(
        HTTPClientError(
          .unavailable,
          "libcurl could not start: \(String(cString: functions.curl_easy_strerror(code)))"))
    }
    return .success(FunctionTable(functions))
  }

  private static func missing(_ reason: String) -> HTTPClientError {
    HTTPClientError(
      .unavailable,
      "talking to a ListStore server needs libcurl: install libcurl4 (apt install libcurl4); "
        + reason)
  }
}

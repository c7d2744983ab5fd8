internal import CLibEvent

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The files of a TLS server: a certificate chain and its private key, both PEM.
public struct TLSFiles: Sendable {
  /// The certificate, followed by any intermediates (`--tls-cert`).
  public var certificate: String
  /// Its private key, unencrypted (`--tls-key`).
  public var key: String

  /// The two files.
  public init(certificate: String, key: String) {
    self.certificate = certificate
    self.key = key
  }
}

/// An OpenSSL server context, and the wrapping of each accepted connection in TLS
/// through libevent's OpenSSL bufferevents. Both libraries are loaded when the first
/// context is made, so that a server without TLS, and every other program, needs neither.
final class TLSContext: @unchecked Sendable {
  private let functions: TLSFunctions
  private let context: OpaquePointer

  /// The functions, or why they cannot be had; resolved once per process.
  private static let loaded: Result<TLSFunctions, ServerError> = load()

  /// Loads the certificate and key.
  /// - Throws: ``ServerError`` when the libraries are missing, or the files cannot be
  ///   read, are not PEM, or do not belong together.
  init(_ files: TLSFiles) throws(ServerError) {
    let functions = try Self.loaded.get()
    self.functions = functions
    guard let method = functions.TLS_server_method(), let context = functions.SSL_CTX_new(method)
    else { throw ServerError("OpenSSL cannot make a TLS context: \(Self.lastError(functions))") }
    // Fully made from here: a failure below frees the context in deinit.
    self.context = context
    guard functions.SSL_CTX_use_certificate_chain_file(context, files.certificate) == 1 else {
      let reason = Self.lastError(functions)
      throw ServerError("cannot use \(files.certificate) as the TLS certificate: \(reason)")
    }
    guard functions.SSL_CTX_use_PrivateKey_file(context, files.key, LISTSTORE_SSL_FILETYPE_PEM) == 1
    else {
      let reason = Self.lastError(functions)
      throw ServerError("cannot use \(files.key) as the TLS key: \(reason)")
    }
    guard functions.SSL_CTX_check_private_key(context) == 1 else {
      throw ServerError("\(files.key) is not the key of the certificate \(files.certificate)")
    }
  }

  deinit { functions.SSL_CTX_free(context) }

  /// A bufferevent that accepts TLS on the accepted socket `fd` (and closes it when
  /// freed), or `nil`.
  func bufferevent(base: OpaquePointer, fd: Int32) -> OpaquePointer? {
    guard let ssl = functions.SSL_new(context) else { return nil }
    return functions.bufferevent_openssl_socket_new(
      base, fd, ssl, LISTSTORE_BUFFEREVENT_SSL_ACCEPTING, LISTSTORE_BEV_OPT_CLOSE_ON_FREE)
  }

  private static func lastError(_ functions: TLSFunctions) -> String {
    let code = functions.ERR_get_error()
    guard code != 0 else { return "no reason given" }
    var buffer = [CChar](repeating: 0, count: 256)
    functions.ERR_error_string_n(code, &buffer, buffer.count)
    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func load() -> Result<TLSFunctions, ServerError> {
    let names = (
      libevent: env("LISTSTORE_LIBEVENT_OPENSSL") ?? "libevent_openssl-2.1.so.7",
      ssl: env("LISTSTORE_LIBSSL") ?? "libssl.so.3"
    )
    guard let libevent = dlopen(names.libevent, RTLD_NOW | RTLD_LOCAL) else {
      return .failure(missing("libevent-openssl-2.1-7", names.libevent))
    }
    guard let ssl = dlopen(names.ssl, RTLD_NOW | RTLD_LOCAL) else {
      return .failure(missing("libssl3", names.ssl))
    }
    let table = UnsafeMutablePointer<TLSFunctions>.allocate(capacity: 1)
    defer { table.deallocate() }
    if let function = liststore_tls_resolve(libevent, ssl, table) {
      return .failure(
        ServerError(
          "serving TLS needs libevent-openssl-2.1-7 and libssl3; "
            + "\(String(cString: function)) is missing from them"))
    }
    return .success(table.move())
  }

  private static func env(_ name: String) -> String? {
    guard let value = getenv(name), value.pointee != 0 else { return nil }
    return String(cString: value)
  }

  private static func missing(_ package: String, _ name: String) -> ServerError {
    let reason = dlerror().map { String(cString: $0) } ?? "\(name) cannot be loaded"
    return ServerError(
      "serving TLS needs libevent's OpenSSL part: install \(package) "
        + "(apt install \(package)); \(reason)")
  }
}

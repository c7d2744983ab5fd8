/// Decodes a `Transfer-Encoding: chunked` body as its bytes arrive (RFC 9112 §7.1): chunk
/// sizes in hex with optional extensions (ignored), each chunk's data followed by CRLF, a
/// last chunk of size 0, trailer fields (read and dropped), an empty line.
struct ChunkedDecoder {
  private enum State: Equatable {
    case size
    case data(remaining: Int)
    case dataEnd
    case trailer
    case done
  }

  private var state = State.size
  /// The longest size line or trailer line taken, and all trailer lines together.
  private let lineLimit = 4096
  private var trailerBytes = 0
  /// The largest body accepted, in bytes.
  let limit: Int
  /// The body's bytes decoded so far.
  private(set) var decoded = 0

  init(limit: Int) { self.limit = limit }

  /// Whether the body ended.
  var isComplete: Bool { state == .done }

  /// Decodes what it can of `input`, appending the body's bytes to `body`.
  /// - Parameters:
  ///   - input: The bytes received and not yet decoded.
  ///   - body: Where the body's bytes go.
  /// - Returns: How many bytes of `input` were used; the rest waits for more input.
  /// - Throws: ``HeadError`` for malformed framing, or a body over `limit` (413).
  mutating func decode(_ input: ArraySlice<UInt8>, into body: inout [UInt8]) throws(HeadError)
    -> Int
  {
    var index = input.startIndex
    while index < input.endIndex && state != .done {
      switch state {
      case .size, .trailer:
        guard let newline = input[index...].firstIndex(of: 0x0A) else {
          if input.endIndex - index > lineLimit { throw .bad("a chunk's size line is too long") }
          return index - input.startIndex
        }
        var line = input[index..<newline]
        if line.last == 0x0D { line = line.dropLast() }
        guard !line.contains(0x0D), line.count <= lineLimit else {
          throw .bad("a chunk's size line is malformed")
        }
        index = newline + 1
        if state == .trailer {
          trailerBytes += line.count
          if trailerBytes > lineLimit { throw .bad("the chunked body's trailer is too long") }
          if line.isEmpty { state = .done }
          continue
        }
        let digits = line.prefix { $0 != UInt8(ascii: ";") }
        guard !digits.isEmpty, digits.count <= 15,
          let size = Int(
            String(decoding: digits, as: UTF8.self), radix: 16), size >= 0,
          digits.allSatisfy(\.isHexDigit)
        else { throw .bad("a chunk's size is not a hexadecimal number") }
        if size == 0 {
          state = .trailer
        } else {
          guard decoded + size <= limit else {
            throw HeadError(413, "tooLarge", "the body is over \(limit) bytes")
          }
          state = .data(remaining: size)
        }
      case .data(let remaining):
        let take = min(remaining, input.endIndex - index)
        body += input[index..<index + take]
        decoded += take
        index += take
        state = remaining == take ? .dataEnd : .data(remaining: remaining - take)
      case .dataEnd:
        if input[index] == 0x0D {
          guard index + 1 < input.endIndex else { return index - input.startIndex }
          index += 1
        }
        guard input[index] == 0x0A else { throw .bad("a chunk's data is not followed by CRLF") }
        index += 1
        state = .size
      case .done:
        break
      }
    }
    return index - input.startIndex
  }
}

extension UInt8 {
  fileprivate var isHexDigit: Bool {
    (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
  }
}

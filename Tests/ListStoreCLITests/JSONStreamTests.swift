import Foundation
import ListStore
import ListStoreFormats
import TestSupport
import Testing

@testable import ListStoreCLI

/// The streaming tokenizer `import` reads with accepts and refuses what `JSONSyntax`
/// does, with the same message, line and column, whatever the size of the chunks it
/// reads (a chunk boundary may fall anywhere, inside a string or a UTF-8 character).
@Suite struct JSONStreamTests {
  static let documents: [String] = [
    #"{"sections": [{"header": "A", "items": [1, "x", {"value": null}, [true, false]]}]}"#,
    "{\n  \"a\": \"é ü — 😀\",\n  \"b\": [1.5e3, -0, 12345678901234567890]\n}",
    #"{"s": "esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"}"#,
    "\u{FEFF}  [1, 2]  ",
    "{\"sections\": [\n  {\"header\": \"A\",\n   \"items\": [1, 2,]}]}",
    "{\"sections\": [\n  {\"header\": 'A'}]}",
    #"{"n": [1e400]}"#,
    "{} []",
    "",
    "   ",
    "[1, 2",
    #"{"a" 1}"#,
    #"{"a": 1,}"#,
    #"{1: 2}"#,
    #"["x\y"]"#,
    "[\"tab\there\"]",
    #"["\u12"]"#,
    "[tru]",
    "[truex]",
    "[01]",
    "[1.]",
    "[1e]",
    "[-]",
    "[\"é\"", "{\"é\": [1 2]}",
    String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
  ]

  /// A string holding bytes that are not UTF-8.
  static let invalidUTF8: [UInt8] = Array("[\"ab".utf8) + [0xC3, 0x28] + Array("\"]".utf8)

  func tokens(of bytes: [UInt8], chunkSize: Int) throws -> Result<[UInt8], JSONSyntax.SyntaxError> {
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    let path = folder.file("doc.json")
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    let descriptor = open(path, O_RDONLY)
    defer { close(descriptor) }
    let stream = JSONStream(descriptor: descriptor, chunkSize: chunkSize)
    stream.capturing = true
    do {
      try stream.skipToEnd()
      return .success(stream.capture)
    } catch {
      return .failure(error)
    }
  }

  @Test func agreesWithTheTreeParserAtEveryChunkSize() throws {
    for document in Self.documents.map({ Array($0.utf8) }) + [Self.invalidUTF8] {
      let expected: Result<[UInt8], JSONSyntax.SyntaxError>
      do {
        _ = try JSONSyntax.parse(document)
        // The compact text: the document without white space outside strings.
        let text = String(decoding: document, as: UTF8.self)
        expected = .success(
          Array(
            JSONText.minified(text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text).utf8))
      } catch {
        expected = .failure(error)
      }
      for chunkSize in [1, 2, 3, 5, 7, 64, 1 << 20] {
        let got = try tokens(of: document, chunkSize: chunkSize)
        let name =
          "\(String(decoding: document.prefix(60), as: UTF8.self).debugDescription) in chunks of \(chunkSize)"
        switch (expected, got) {
        case (.success(let text), .success(let captured)):
          #expect(captured == text, "\(name)")
        case (.failure(let error), .failure(let streamed)):
          #expect(streamed.message == error.message, "\(name)")
          #expect(streamed.line == error.line, "\(name)")
          #expect(streamed.column == error.column, "\(name)")
          #expect(streamed.isNumberOutOfRange == error.isNumberOutOfRange, "\(name)")
        default:
          Issue.record("\(name): \(expected) against \(got)")
        }
      }
    }
  }
}

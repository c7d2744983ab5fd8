import Foundation

// Writes a Swift file holding a text file as a string literal: the server's OpenAPI
// description (docs/openapi.json), so that the binary serves the very document the
// repository holds.
//
//   document-embedder OUTPUT.swift INPUT TYPE
//
// The output is left untouched when its text would not change.
let arguments = CommandLine.arguments
guard arguments.count == 4 else {
  FileHandle.standardError.write(Data("usage: document-embedder OUTPUT INPUT TYPE\n".utf8))
  exit(64)
}
let (output, input, type) = (arguments[1], arguments[2], arguments[3])
guard let data = FileManager.default.contents(atPath: input) else {
  FileHandle.standardError.write(Data("document-embedder: cannot read \(input)\n".utf8))
  exit(1)
}
let text = String(decoding: data, as: UTF8.self)
// A raw string whose delimiter the text does not hold.
var hashes = "#"
while text.contains("\"" + hashes) || text.contains(hashes + "\"") { hashes += "#" }
let swift = """
  // Made by document-embedder from \(URL(fileURLWithPath: input).lastPathComponent); do not edit.
  enum \(type) {
    /// The text of \(URL(fileURLWithPath: input).lastPathComponent).
    static let text = \(hashes)\"\"\"
  \(text.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n"))
    \"\"\"\(hashes)
  }

  """
if FileManager.default.contents(atPath: output) != Data(swift.utf8) {
  try Data(swift.utf8).write(to: URL(fileURLWithPath: output))
}

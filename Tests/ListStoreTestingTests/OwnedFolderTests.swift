import Foundation
import ListStoreTesting
import Testing

/// Temporary folders named after their process: the next process removes those whose
/// process is gone (a killed test runs no exit handler), and no other.
@Suite struct OwnedFolderTests {
  @Test func aFolderOfAProcessThatIsGoneIsRemovedAndOthersStay() throws {
    let parent = try #require(OwnedFolder.make(prefix: "owned-parent", in: NSTemporaryDirectory()))
    defer { OwnedFolder.removeTree(parent) }
    // A process that has ended: its pid is free.
    let gone = Process()
    gone.executableURL = URL(fileURLWithPath: "/bin/true")
    try gone.run()
    gone.waitUntilExit()
    let leftover = parent + "/probe-\(gone.processIdentifier)-abcdef"
    let alive = parent + "/probe-\(getpid())-ghijkl"
    let unrelated = parent + "/probe-without-a-pid"
    for folder in [leftover, alive, unrelated] {
      try FileManager.default.createDirectory(
        atPath: folder + "/inner", withIntermediateDirectories: true)
      _ = FileManager.default.createFile(atPath: folder + "/inner/file", contents: Data("x".utf8))
      chmod(folder + "/inner", 0o500)
    }
    var cleaned: [String] = []
    let made = try #require(OwnedFolder.make(prefix: "probe", in: parent) { cleaned.append($0) })
    #expect(cleaned == [leftover])
    #expect(!FileManager.default.fileExists(atPath: leftover))
    #expect(FileManager.default.fileExists(atPath: alive))
    #expect(FileManager.default.fileExists(atPath: unrelated))
    #expect(made.hasPrefix(parent + "/probe-\(getpid())-"))
    // Only the first folder of a prefix sweeps.
    let second = parent + "/probe-\(gone.processIdentifier)-mnopqr"
    try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
    _ = OwnedFolder.make(prefix: "probe", in: parent)
    #expect(FileManager.default.fileExists(atPath: second))
  }
}

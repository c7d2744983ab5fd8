import Foundation
import Testing

/// `--db :memory:`: a throwaway database whose folder goes with the process that made it.
@Suite struct InMemoryDatabaseTests {
  /// Where in-memory databases live: `/dev/shm` when the system has it.
  var base: String {
    var isFolder: ObjCBool = false
    return FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isFolder)
      && isFolder.boolValue ? "/dev/shm" : FileManager.default.temporaryDirectory.path
  }

  /// Runs the built `liststore` with `arguments` and returns its process id and status.
  func liststore(_ arguments: [String]) throws -> (pid: Int32, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: productsFolder() + "/liststore")
    process.arguments = arguments
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    return (process.processIdentifier, process.terminationStatus)
  }

  func productsFolder() -> String {
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.path != "/" {
      url.deleteLastPathComponent()
      if FileManager.default.isExecutableFile(atPath: url.path + "/liststore") { return url.path }
    }
    return FileManager.default.currentDirectoryPath + "/.build/debug"
  }

  func folders(ofProcess pid: Int32) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: base).filter {
      $0.hasPrefix("liststore-memory-\(pid)-")
    }
  }

  @Test func aProcessRemovesItsFolderWhenItExitsAndTheFoldersOfGoneProcesses() throws {
    // The folder of a process that is gone, as a killed process leaves it.
    let gone = Process()
    gone.executableURL = URL(fileURLWithPath: "/bin/true")
    try gone.run()
    gone.waitUntilExit()
    let stale = base + "/liststore-memory-\(gone.processIdentifier)-left"
    try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
    try Data("x".utf8).write(to: URL(fileURLWithPath: stale + "/memory.sqlite"))

    let run = try liststore(["--db", ":memory:", "demo"])
    #expect(run.status == 0)
    #expect(try folders(ofProcess: run.pid).isEmpty)
    #expect(!FileManager.default.fileExists(atPath: stale))
  }
}

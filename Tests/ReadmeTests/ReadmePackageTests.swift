import Foundation
import Testing

/// Every Swift code block of README.md and of the DocC articles, as a new user runs it: in a
/// package of its own that depends on this one by path, built with `swift build`, and run
/// twice (the second run finds the database of the first).
///
/// Each document becomes targets of one package: its blocks that import `Testing` or
/// `XCTest` or declare tests, in order, the file of a test target run with `swift test`;
/// its other blocks, in order,
/// the `main.swift` of an executable, whose output must be what the document's comments
/// say — `print(…)  // OUTPUT` and `…  // prints OUTPUT`, with `, then ` between lines.
///
/// The package is written to a new temporary folder each time, but builds into
/// `.build/readme-examples` of this package, so that only the first run compiles ListStore
/// for it (about a minute on 2 busy cores); later runs compile the examples alone.
@Suite(.serialized) struct ReadmePackageTests {
  /// This package's root folder.
  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

  /// The documents whose Swift blocks are examples, relative to the root.
  static let documents = [
    "README.md",
    "Sources/ListStore/ListStore.docc/GettingStarted.md",
    "Sources/ListStore/ListStore.docc/Cities.md",
    "Sources/ListStore/ListStore.docc/Counters.md",
    "Sources/ListStoreTesting/ListStoreTesting.docc/TestingWithListStore.md",
  ]

  /// One document's examples.
  struct Examples {
    var document: String
    var program: [String]
    var tests: [String]

    init(document: String, blocks: [String]) {
      self.document = document
      tests = blocks.filter(Self.isTest)
      program = blocks.filter { !Self.isTest($0) }
    }

    /// Whether a block is test code: it imports a test framework, or declares tests.
    static func isTest(_ block: String) -> Bool {
      ["import Testing", "import XCTest", "@Test", "@Suite", "XCTestCase"].contains {
        block.contains($0)
      }
    }
  }

  @Test(.timeLimit(.minutes(20)))
  func everySwiftBlockCompilesAndRunsTwiceInAPackageOfItsOwn() throws {
    let examples = try Self.documents.map { document in
      Examples(document: document, blocks: try Self.swiftBlocks(of: Self.root + "/" + document))
    }
    let readme = try #require(examples.first)
    #expect(readme.program.count >= 3 && readme.tests.count >= 2)
    // The README's manifest depends on a release by version (.ci/run builds one so); its
    // text gives the path form the examples' manifest uses, which reaches this package
    // through a folder of another name: it works whatever the clone's folder is called.
    let manifests = try Self.manifestBlocks(of: Self.root + "/README.md")
    #expect(manifests.count == 1)
    #expect(manifests.first?.contains(#"from: "0.1.0")"#) == true)
    #expect(manifests.first?.contains(#"package: "ListStore")"#) == true)
    let text = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
    #expect(text.contains(#"`.package(name:\#n"ListStore", path: "../ListStore")`"#))

    let package = try Scratch()
    defer { package.remove() }
    let clone = package.path + "/a-clone-of-the-package"
    try FileManager.default.createSymbolicLink(atPath: clone, withDestinationPath: Self.root)
    try package.write("Package.swift", Self.manifest(examples, dependencyPath: clone))
    for (number, example) in examples.enumerated() {
      if !example.program.isEmpty {
        try package.write(
          "Sources/Example\(number)/main.swift", example.program.joined(separator: "\n"))
      }
      if !example.tests.isEmpty {
        // One file, so that later blocks use the imports of the first.
        try package.write(
          "Tests/Example\(number)Tests/Examples.swift", example.tests.joined(separator: "\n"))
      }
    }

    let scratchPath = Self.root + "/.build/readme-examples"
    let clock = ContinuousClock()
    var build: ProcessOutput?
    let buildTime = try clock.measure {
      build = try Self.swift(
        ["build", "--build-tests", "--package-path", package.path, "--scratch-path", scratchPath])
    }
    let built = try #require(build)
    try #require(built.status == 0, "swift build failed:\n\(built.output)")
    #expect(
      !built.output.contains("warning:"), "the examples build with warnings:\n\(built.output)")
    print("documentation examples: built in \(buildTime)")

    // Each program, twice, in a folder of its own: the second run finds what the first left.
    let binPath = try Self.swift(
      ["build", "--package-path", package.path, "--scratch-path", scratchPath, "--show-bin-path"]
    ).output.trimmingCharacters(in: .whitespacesAndNewlines)
    for (number, example) in examples.enumerated() where !example.program.isEmpty {
      let expected = Self.expectedOutput(of: example.program)
      let workingDirectory = try Scratch()
      defer { workingDirectory.remove() }
      for run in 1...2 {
        let result = try Self.run(
          binPath + "/Example\(number)", [], in: workingDirectory.path)
        #expect(result.status == 0, "\(example.document), run \(run):\n\(result.output)")
        #expect(
          result.output == expected,
          "\(example.document), run \(run), printed:\n\(result.output)")
        // In-memory databases held until the end (top-level code) go when the program does.
        #expect(
          Self.inMemoryFolders(ofProcess: result.pid).isEmpty,
          "\(example.document) left its in-memory database behind")
      }
    }

    // The test blocks, twice: they pass again (each test makes its own repository).
    let tests = examples.flatMap(\.tests)
    let swiftTests = tests.map { $0.components(separatedBy: "@Test").count - 1 }.reduce(0, +)
    let xcTests = tests.map { $0.components(separatedBy: "func test").count - 1 }.reduce(0, +)
    let plural = { (count: Int) in count == 1 ? "\(count) test" : "\(count) tests" }
    for run in 1...2 {
      let result = try Self.swift(
        ["test", "--skip-build", "--package-path", package.path, "--scratch-path", scratchPath])
      #expect(result.status == 0, "swift test, run \(run), failed:\n\(result.output)")
      #expect(result.output.contains("Test run with \(plural(swiftTests)) in"), "\(result.output)")
      #expect(
        result.output.contains("Executed \(plural(xcTests)), with 0 failures"), "\(result.output)")
    }
  }

  @Test func expectedOutputComesFromTheComments() {
    let program = """
      print(x)  // 3
      try list.append(y)  // prints ["y"] 1
      let z = 1  // not output
      print(a, b)  // 1 2, then 3 4
      print(c)

      """
    #expect(Self.expectedOutput(of: [program]) == "3\n[\"y\"] 1\n1 2\n3 4\n")
  }

  /// The in-memory database folders a process made that are still there.
  static func inMemoryFolders(ofProcess pid: Int32) -> [String] {
    ["/dev/shm", NSTemporaryDirectory(), "/tmp"].flatMap { base in
      ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []).filter {
        $0.hasPrefix("liststore-memory-\(pid)-")
      }
    }
  }

  /// The contents of every ```swift fenced block, in order, but for package manifests
  /// (`// swift-tools-version` first), which ``manifestBlocks(of:)`` gives.
  static func swiftBlocks(of path: String) throws -> [String] {
    try fencedSwift(of: path).filter { !$0.hasPrefix("// swift-tools-version") }
  }

  /// The package manifests among the ```swift blocks.
  static func manifestBlocks(of path: String) throws -> [String] {
    try fencedSwift(of: path).filter { $0.hasPrefix("// swift-tools-version") }
  }

  private static func fencedSwift(of path: String) throws -> [String] {
    let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
    var blocks: [String] = []
    var current: [String]?
    for line in lines {
      if current == nil {
        if line.trimmingCharacters(in: .whitespaces) == "```swift" { current = [] }
      } else if line.trimmingCharacters(in: .whitespaces) == "```" {
        blocks.append((current ?? []).joined(separator: "\n") + "\n")
        current = nil
      } else {
        current?.append(line)
      }
    }
    return blocks
  }

  /// What a program's comments say it prints: `print(…)  // OUTPUT` and `…  // prints
  /// OUTPUT`, with `, then ` between lines.
  static func expectedOutput(of program: [String]) -> String {
    var lines: [String] = []
    for line in program.joined(separator: "\n").components(separatedBy: "\n") {
      guard let comment = line.range(of: "  // ") else { continue }
      var text = String(line[comment.upperBound...])
      if text.hasPrefix("prints ") {
        text.removeFirst("prints ".count)
      } else if !line[..<comment.lowerBound].contains("print(") {
        continue
      }
      lines += text.components(separatedBy: ", then ")
    }
    return lines.map { $0 + "\n" }.joined()
  }

  /// The examples package's manifest: an executable and a test target per document, with
  /// the dependency declared as the README's manifest declares it (`name:` gives the
  /// package the name its products are referred to by, whatever its folder's name).
  static func manifest(_ examples: [Examples], dependencyPath: String) -> String {
    let liststore = #".product(name: "ListStore", package: "ListStore")"#
    let testing = #".product(name: "ListStoreTesting", package: "ListStore")"#
    let client =
      #".product(name: "ListStoreClient", package: "ListStore"), "#
      + #".product(name: "ListStoreClientTesting", package: "ListStore")"#
    var targets: [String] = []
    for (number, example) in examples.enumerated() {
      if !example.program.isEmpty {
        targets.append(
          #"    .executableTarget(name: "Example\#(number)", dependencies: [\#(liststore)]),"#)
      }
      if !example.tests.isEmpty {
        targets.append(
          #"    .testTarget(name: "Example\#(number)Tests", dependencies: [\#(liststore), \#(testing), \#(client)]),"#
        )
      }
    }
    return """
      // swift-tools-version: 6.0
      import PackageDescription

      let package = Package(
        name: "DocumentationExamples",
        platforms: [.macOS(.v15)],
        dependencies: [.package(name: "ListStore", path: "\(dependencyPath)")],
        targets: [
      \(targets.joined(separator: "\n"))
        ]
      )

      """
  }

  /// Runs `swift` with `arguments`.
  static func swift(_ arguments: [String]) throws -> ProcessOutput {
    try run("/usr/bin/env", ["swift"] + arguments, in: nil)
  }

  /// Runs a program to completion, standard output and error together.
  static func run(_ executable: String, _ arguments: [String], in directory: String?) throws
    -> ProcessOutput
  {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessOutput(
      status: process.terminationStatus, output: String(decoding: data, as: UTF8.self),
      pid: process.processIdentifier)
  }
}

/// A finished program's exit status and output.
struct ProcessOutput {
  var status: Int32
  var output: String
  var pid: Int32
}

/// A new folder under the temporary folder, removed by `remove()`.
struct Scratch {
  let path: String

  init() throws {
    path = NSTemporaryDirectory() + "liststore-readme-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  }

  func write(_ file: String, _ contents: String) throws {
    let url = URL(fileURLWithPath: path + "/" + file)
    try FileManager.default.createDirectory(
      at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try contents.write(to: url, atomically: true, encoding: .utf8)
  }

  func remove() {
    try? FileManager.default.removeItem(atPath: path)
  }
}

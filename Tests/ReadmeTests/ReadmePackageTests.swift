import Foundation
import Testing

/// Every Swift code block of README.md, as a new user runs it: in a package of its own that
/// depends on this one by path, built with `swift build`, and run twice (the second run
/// finds the database of the first).
///
/// Blocks that import `Testing` or `XCTest` become the files of the package's test target,
/// run with `swift test`; the others, in order, become the `main.swift` of its executable.
/// The package is written to a new temporary folder each time, but builds into
/// `.build/readme-examples` of this package, so that only the first run compiles ListStore
/// for it (a few minutes on 2 cores); later runs compile the examples alone.
@Suite(.serialized) struct ReadmePackageTests {
  /// This package's root folder.
  static let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

  /// What the examples' executable prints, on the first run and on the second alike.
  static let expectedOutput = """
    Copenhagen
    ["Rome"] 1
    Rome
    [] 1
    ["Oslo"] []
    [] [[0, 3]]
    Cities: 3
    Cities: 4

    """

  @Test(.timeLimit(.minutes(20)))
  func everySwiftBlockCompilesAndRunsTwiceInAPackageOfItsOwn() throws {
    let blocks = try Self.swiftBlocks(of: Self.root + "/README.md")
    #expect(blocks.count >= 3)
    let tests = blocks.filter { $0.contains("import Testing") || $0.contains("import XCTest") }
    let program = blocks.filter { block in !tests.contains(block) }
    #expect(!tests.isEmpty && !program.isEmpty)

    let package = try Scratch()
    defer { package.remove() }
    try package.write(
      "Package.swift", Self.manifest(dependencyPath: Self.root, hasTests: !tests.isEmpty))
    try package.write("Sources/Examples/main.swift", program.joined(separator: "\n"))
    for (number, block) in tests.enumerated() {
      try package.write("Tests/ExamplesTests/Block\(number + 1).swift", block)
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
    print("README examples: built in \(buildTime)")

    // The program, twice, in a folder of its own: the second run opens what the first made.
    let binary = try Self.swift(
      ["build", "--package-path", package.path, "--scratch-path", scratchPath, "--show-bin-path"])
    let executable = binary.output.trimmingCharacters(in: .whitespacesAndNewlines) + "/Examples"
    let workingDirectory = try Scratch()
    defer { workingDirectory.remove() }
    for run in 1...2 {
      let result = try Self.run(executable, [], in: workingDirectory.path)
      #expect(result.status == 0, "run \(run) failed:\n\(result.output)")
      #expect(result.output == Self.expectedOutput, "run \(run) printed:\n\(result.output)")
    }

    // The test blocks, twice: they must pass again (each test makes its own repository).
    let swiftTests = tests.map { $0.components(separatedBy: "@Test").count - 1 }.reduce(0, +)
    let xcTests = tests.map { $0.components(separatedBy: "func test").count - 1 }.reduce(0, +)
    for run in 1...2 {
      let result = try Self.swift(
        ["test", "--skip-build", "--package-path", package.path, "--scratch-path", scratchPath])
      #expect(result.status == 0, "swift test, run \(run), failed:\n\(result.output)")
      let plural = { (count: Int) in count == 1 ? "\(count) test" : "\(count) tests" }
      #expect(
        result.output.contains("Test run with \(plural(swiftTests)) in"),
        "\(result.output)")
      #expect(
        result.output.contains("Executed \(plural(xcTests)), with 0 failures"),
        "\(result.output)")
    }
  }

  /// The contents of every ```swift fenced block, in order.
  static func swiftBlocks(of path: String) throws -> [String] {
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

  /// The examples package's manifest: an executable and, with test blocks, a test target.
  static func manifest(dependencyPath: String, hasTests: Bool) -> String {
    let identity = URL(fileURLWithPath: dependencyPath).lastPathComponent.lowercased()
    let testTarget =
      hasTests
      ? """
          .testTarget(
            name: "ExamplesTests",
            dependencies: [
              .product(name: "ListStore", package: "\(identity)"),
              .product(name: "ListStoreTesting", package: "\(identity)"),
            ]),
      """ : ""
    return """
      // swift-tools-version: 6.0
      import PackageDescription

      let package = Package(
        name: "ReadmeExamples",
        platforms: [.macOS(.v15)],
        dependencies: [.package(path: "\(dependencyPath)")],
        targets: [
          .executableTarget(
            name: "Examples", dependencies: [.product(name: "ListStore", package: "\(identity)")]),
      \(testTarget)
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
      status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
  }
}

/// A finished program's exit status and output.
struct ProcessOutput {
  var status: Int32
  var output: String
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

import Foundation
import TestSupport

/// A `liststore watch LIST --json` process whose output is replayed line by line, as it
/// arrives, by the rules of `docs/changesets.md` (``applyWatchChanges(_:to:)``).
/// ``wait(timeout:until:)`` wakes on every line: no polling, no sleeping.
final class WatchFollower: @unchecked Sendable {
  // Everything below `condition` is touched only with it locked; the reading thread
  // changes it and wakes the waiting ones.
  private let condition = NSCondition()
  private var sections: [[String: Any]]?
  private var problems: [String] = []
  private var lines = 0
  private var finished = false

  private let process = Process()
  private let errorFile: String

  /// Starts `liststore --db path watch list --json`, its standard error going to `errorFile`.
  init(path: String, list: String, errorFile: String) throws {
    self.errorFile = errorFile
    process.executableURL = URL(fileURLWithPath: liststoreBinary)
    process.arguments = ["--db", path, "watch", list, "--json"]
    let output = Pipe()
    process.standardOutput = output
    _ = FileManager.default.createFile(atPath: errorFile, contents: nil)
    process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorFile))
    try process.run()
    let handle = output.fileHandleForReading
    Thread { [self] in read(handle) }.start()
  }

  /// Reads the output until the process closes it, a blocking read at a time.
  private func read(_ handle: FileHandle) {
    var buffer = Data()
    while true {
      let data = handle.availableData
      if data.isEmpty { break }
      buffer.append(data)
      while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = Data(buffer[buffer.startIndex..<newline])
        buffer.removeSubrange(buffer.startIndex...newline)
        apply(line)
      }
    }
    condition.lock()
    if !buffer.isEmpty {
      problems.append("an unfinished last line: \(String(decoding: buffer, as: UTF8.self))")
    }
    finished = true
    condition.broadcast()
    condition.unlock()
  }

  private func apply(_ line: Data) {
    condition.lock()
    defer {
      condition.broadcast()
      condition.unlock()
    }
    lines += 1
    let text = String(decoding: line, as: UTF8.self)
    do {
      let object = try JSONSerialization.jsonObject(with: line) as? [String: Any]
      if let snapshot = object?["snapshot"] as? [String: Any] {
        if sections != nil { problems.append("line \(lines): a second snapshot") }
        sections = snapshot["sections"] as? [[String: Any]] ?? []
      } else if let changes = object?["changes"] as? [String: Any], var current = sections {
        try applyWatchChanges(changes, to: &current)
        sections = current
      } else {
        problems.append("line \(lines) is neither a snapshot nor changes after one: \(text)")
      }
    } catch {
      problems.append("line \(lines) does not apply: \(error)\n\(text)")
    }
  }

  /// The replayed sections (`nil` before the snapshot), the problems met, and the
  /// number of lines read.
  var state: (sections: [[String: Any]]?, problems: [String], lines: Int) {
    condition.lock()
    defer { condition.unlock() }
    return (sections, problems, lines)
  }

  /// Waits until `satisfied` holds for the replayed sections, checking again after every
  /// line, for at most `timeout` seconds — a bound for a test that would otherwise hang,
  /// never the way it synchronizes.
  /// - Returns: Whether it held.
  func wait(timeout: TimeInterval, until satisfied: ([[String: Any]]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    condition.lock()
    defer { condition.unlock() }
    while true {
      if let sections, satisfied(sections) { return true }
      if finished || !condition.wait(until: deadline) {
        return sections.map(satisfied) ?? false
      }
    }
  }

  /// Stops the process with SIGTERM and waits for it and for its last line.
  /// - Returns: How it exited, and what it wrote to standard error.
  func stop() -> (status: Int32, signaled: Bool, errors: String) {
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    condition.lock()
    while !finished { condition.wait() }
    condition.unlock()
    let errors = String(
      decoding: FileManager.default.contents(atPath: errorFile) ?? Data(), as: UTF8.self)
    return (process.terminationStatus, process.terminationReason == .uncaughtSignal, errors)
  }
}

/// Sections in the form the tests compare across `watch --json` and the database: the
/// id, the metadata (`{header, footer}` for metadata of that shape, else the value
/// itself) and the items with their ids and values, all as parsed JSON.
enum ComparableSections {
  /// The sections a `watch --json` replay (or `show --json`) gives.
  static func of(watch sections: [[String: Any]]) -> NSArray {
    sections.map { section -> NSDictionary in
      let metadata: Any =
        section["metadata"]
        ?? NSDictionary(dictionary: [
          "header": section["header"] ?? NSNull(), "footer": section["footer"] ?? NSNull(),
        ])
      let items = (section["items"] as? [[String: Any]] ?? []).map { item in
        NSDictionary(dictionary: ["id": item["id"] ?? NSNull(), "value": item["value"] ?? NSNull()])
      }
      return NSDictionary(dictionary: [
        "id": section["id"] ?? NSNull(), "metadata": metadata, "items": NSArray(array: items),
      ])
    } as NSArray
  }

  /// The sections of the test's own reading of the database.
  static func of(_ contents: ListContents) -> NSArray {
    contents.sections.map { section -> NSDictionary in
      let items = section.items.map { item in
        NSDictionary(dictionary: ["id": NSNumber(value: item.id), "value": parse(item.value)])
      }
      return NSDictionary(dictionary: [
        "id": NSNumber(value: section.id), "metadata": standardized(parse(section.metadata)),
        "items": NSArray(array: items),
      ])
    } as NSArray
  }

  private static func parse(_ json: String) -> Any {
    (try? JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed))
      ?? NSNull()
  }

  /// `{header, footer}` with both keys when `metadata` has that shape (a string header,
  /// a string or null footer, nothing else), as `show --json` prints it; else `metadata`.
  private static func standardized(_ metadata: Any) -> Any {
    guard let object = metadata as? [String: Any],
      Set(object.keys).isSubset(of: ["header", "footer"]),
      let header = object["header"] as? String
    else { return metadata }
    let footer = object["footer"] ?? NSNull()
    guard footer is NSNull || footer is String else { return metadata }
    return NSDictionary(dictionary: ["header": header, "footer": footer])
  }
}

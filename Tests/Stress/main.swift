// Workloads for the reliability tests, run as separate processes so that a test can
// kill them at any moment or run several at once. DB is a SQLite file or a PostgreSQL
// connection string. Every line is written (unbuffered) right after the transaction it
// reports committed, or right before one begins.
//
//   liststore-stress import DB LIST COUNT          one transaction of COUNT items
//   liststore-stress moves DB LIST COUNT SEED      COUNT moves, one transaction each
//   liststore-stress writer DB LIST NAME COUNT SEED   random writes on its own items
import FoundationEssentials
import ListStore
import ListStorePostgreSQL

#if canImport(Glibc)
  import Glibc
#endif

func say(_ line: String) {
  let text = line + "\n"
  _ = text.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
}

func fail(_ message: String) -> Never {
  let text = "liststore-stress: \(message)\n"
  _ = text.withCString { write(STDERR_FILENO, $0, strlen($0)) }
  exit(1)
}

struct Generator: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 4 else {
  fail("usage: see the comment at the top of Tests/Stress/main.swift")
}
let count = Int(arguments[3]) ?? 0

do {
  let repository = try Repository.open(arguments[1])
  switch arguments[0] {
  case "import":
    let sections = (0..<10).map { section in
      (
        metadata: "{\"header\":\"S\(section)\",\"footer\":null}",
        items: (0..<count / 10).map {
          "\"item \(section)-\($0) " + String(repeating: "x", count: 40) + "\""
        }
      )
    }
    say("begin")
    _ = try repository.createList(arguments[2], contents: sections)
    say("committed")

  case "moves":
    guard arguments.count == 5, let seed = UInt64(arguments[4]) else {
      fail("moves DB LIST COUNT SEED")
    }
    var random = Generator(state: seed)
    let list = try repository.list(arguments[2], metadata: RawJSON.self, item: RawJSON.self)
    for _ in 0..<count {
      let sizes = try (0..<list.numberOfSections()).map { try list.numberOfItems(inSection: $0) }
      guard let from = sizes.indices.filter({ sizes[$0] > 0 }).randomElement(using: &random) else {
        break
      }
      let row = Int.random(in: 0..<sizes[from], using: &random)
      let id = try list.itemID(at: IndexPath(indexes: [from, row]))
      let to = Int.random(in: 0..<sizes.count, using: &random)
      let target = Int.random(in: 0...(sizes[to] - (to == from ? 1 : 0)), using: &random)
      say("begin \(id) \(to) \(target)")
      try list.moveItem(id: id, to: IndexPath(indexes: [to, target]))
      say("committed")
    }

  case "writer":
    guard arguments.count == 6, let seed = UInt64(arguments[5]), let count = Int(arguments[4])
    else {
      fail("writer DB LIST NAME COUNT SEED")
    }
    let name = arguments[3]
    var random = Generator(state: seed)
    let list = try repository.list(arguments[2], metadata: RawJSON.self, item: RawJSON.self)
    var mine: [Int64] = []
    for step in 0..<count {
      let value = "\"\(name)-\(step)\""
      switch Int.random(in: 0..<6, using: &random) {
      case 0, 1, 2:
        let sections = try list.numberOfSections()
        let id = try list.appendItem(
          RawJSON(value), toSection: Int.random(in: 0..<sections, using: &random))
        mine.append(id)
        say("add \(id) \(value)")
      case 3 where !mine.isEmpty:
        let id = mine.remove(at: Int.random(in: 0..<mine.count, using: &random))
        try list.removeItem(id: id)
        say("rm \(id)")
      case 4 where !mine.isEmpty:
        let id = mine[Int.random(in: 0..<mine.count, using: &random)]
        try list.replaceItem(id: id, with: RawJSON(value))
        say("set \(id) \(value)")
      default:
        guard let id = mine.randomElement(using: &random) else { continue }
        let sections = try list.numberOfSections()
        try list.moveItem(
          id: id, to: IndexPath(indexes: [Int.random(in: 0..<sections, using: &random), 0]))
        say("move \(id)")
      }
    }
    say("end")

  default:
    fail("unknown workload \(arguments[0])")
  }
} catch {
  fail("\(error)")
}

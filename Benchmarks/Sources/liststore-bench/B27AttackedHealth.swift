import Dispatch
import FoundationEssentials
import ListStore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// B27: `/healthz` on a new connection every 10 ms while the hostile-client suite's
/// attacks hold, at full size, and during a 200,000-operation batch, against the same on
/// the idle server in the same run.
enum AttackedHealthBenchmark {
  static func run(_ options: Options, scratch: String) throws -> [Row] {
    guard let cli = CLIBenchmark.locateCLI(options) else {
      throw BenchError("B27 needs the release CLI (scripts/build-static-liststore.sh) or --cli")
    }
    let size = options.quick ? 20_000 : 100_000
    let operations = options.quick ? 50_000 : 200_000
    let seconds = options.quick ? 2.0 : 5.0
    signal(SIGPIPE, SIG_IGN)
    ServerFanOutBenchmark.raiseOpenFileLimit(to: 4096)
    let folder = try ScratchFolder(in: scratch, name: "b27")
    defer { folder.remove() }
    do {
      let repository = try Repository(path: folder.database)
      let big = try repository.createList("big", metadata: SectionMetadata.self, item: String.self)
      try big.appendSection(SectionMetadata(header: "S"))
      try big.appendItems((0..<size).map(Fixtures.text), toSection: 0)
      let target = try repository.createList(
        "target", metadata: SectionMetadata.self, item: String.self)
      try target.appendSection(SectionMetadata(header: "S"))
    }
    let tokens = folder.path + "/tokens"
    try check(
      FileManager.default.createFile(atPath: tokens, contents: Data("bench write *\n".utf8)),
      "B27: cannot write \(tokens)")
    let batchFile = folder.path + "/adds.jsonl"
    try BatchByIndexBenchmark.writeLines(batchFile, count: operations, section: "0")
    guard let batchBody = FileManager.default.contents(atPath: batchFile) else {
      throw BenchError("B27: cannot read \(batchFile)")
    }
    // The server at the usual 1,024 descriptors, as the attacks found it.
    let server = try ServedDatabase(
      cli: cli, database: folder.database, arguments: ["--tokens", tokens], descriptorLimit: 1024)
    defer { try? server.stop() }
    let port = server.port
    let authorization = "Authorization: Bearer bench\r\n"

    /// /healthz's times while `attack` runs; `attack` returns when its time is up.
    func probed(_ attack: () throws -> Void) throws -> Stats {
      let probe = HealthProbe(port: port, every: 0.01)
      let result = Result { try attack() }
      let times = try probe.stop()
      try result.get()
      return Stats(times)
    }
    func hold() { usleep(useconds_t(seconds * 1e6)) }
    /// Runs `body` on `threads` threads until the attack's time is up.
    func repeatedly(threads: Int, _ body: @escaping @Sendable () -> Void) {
      let stopping = Atomic<Bool>(false)
      let group = DispatchGroup()
      for _ in 0..<threads {
        group.enter()
        Thread.detach {
          defer { group.leave() }
          while !stopping.load(ordering: .relaxed) { body() }
        }
      }
      hold()
      stopping.store(true, ordering: .relaxed)
      group.wait()
    }
    /// Sends what it can of `bytes`, without SIGPIPE; whether all of it went.
    @Sendable func push(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
      bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        == bytes.count
    }

    var attacks: [(name: String, stats: Stats)] = []
    let idle = try probed(hold)
    attacks.append(
      (
        "1,100 idle connections, sending nothing (the server at 1,024 descriptors)",
        try probed {
          let idle = try (0..<1100).map { _ in try LoopbackConnection(port: port) }
          hold()
          withExtendedLifetime(idle) {}
        }
      ))
    attacks.append(
      (
        "900 heads trickled a byte a second (slowloris)",
        try probed {
          let head = Array("GET /v1/lists/big HTTP/1.1\r\nHost: bench\r\nX-Slow: ".utf8)
          let clients = try (0..<900).map { _ in try LoopbackConnection(port: port) }
          for second in 0..<Int(seconds.rounded(.up)) {
            for client in clients { _ = push(client.fd, [head[second % head.count]]) }
            usleep(1_000_000)
          }
        }
      ))
    attacks.append(
      (
        "8 clients without a token sending 250 MB bodies, again as each is refused",
        try probed {
          let head = Array(
            ("POST /v1/lists/target/batch HTTP/1.1\r\nHost: bench\r\n"
              + "Content-Type: application/x-ndjson\r\nContent-Length: 262144000\r\n\r\n").utf8)
          let filler = [UInt8](repeating: UInt8(ascii: "x"), count: 65536)
          repeatedly(threads: 8) {
            guard let connection = try? LoopbackConnection(port: port) else { return }
            guard push(connection.fd, head) else { return }
            for _ in 0..<4000 { guard push(connection.fd, filler) else { break } }
          }
        }
      ))
    attacks.append(
      (
        "30 streams and 30 reads of the \(size)-item list that never read (4 KiB windows)",
        try probed {
          var readers: [LoopbackConnection] = []
          for index in 0..<60 {
            let connection = try LoopbackConnection(port: port, receiveBuffer: 4096)
            let path = index.isMultiple(of: 2) ? "/v1/lists/big/changes" : "/v1/lists/big"
            try connection.send(
              Array(
                ("GET \(path) HTTP/1.1\r\nHost: bench\r\n\(authorization)"
                  + "Accept: text/event-stream\r\n\r\n").utf8))
            readers.append(connection)
          }
          hold()
          withExtendedLifetime(readers) {}
        }
      ))
    attacks.append(
      (
        "smuggling-shaped requests and HEAD on streams, one after another on 2 threads",
        try probed {
          let hidden = "DELETE /v1/lists/target HTTP/1.1\r\nHost: bench\r\n\(authorization)\r\n"
          let shapes = [
            "Transfer-Encoding: gzip", "Content-Length: 5\r\nContent-Length: 200",
            "Transfer-Encoding: chunked\r\nContent-Length: 200", "Content-Length : 200",
          ].map {
            Array(
              ("POST /v1/lists/target/items HTTP/1.1\r\nHost: bench\r\n\(authorization)\($0)\r\n"
                + "Content-Type: application/json\r\n\r\n" + hidden).utf8)
          }
          let head = Array(
            ("HEAD /v1/lists/big/changes HTTP/1.1\r\nHost: bench\r\n\(authorization)"
              + "Accept: text/event-stream\r\n\r\n").utf8)
          let counter = Atomic<Int>(0)
          repeatedly(threads: 2) {
            guard let connection = try? LoopbackConnection(port: port) else { return }
            let turn = counter.add(1, ordering: .relaxed).newValue
            _ = push(connection.fd, turn % 5 == 0 ? head : shapes[turn % shapes.count])
            try? connection.fill()
          }
        }
      ))
    attacks.append(
      (
        "a \(operations)-operation batch (`POST …/batch`, one transaction)",
        try probed {
          let connection = try LoopbackConnection(port: port)
          connection.headers = authorization
          let answer = try connection.request(
            "POST", "/v1/lists/target/batch", body: [UInt8](batchBody), type: "application/x-ndjson"
          )
          try check(answer.status == 200, "B27: the batch answered \(answer.status)")
        }
      ))
    // Nothing the attacks hid ran, and the server is whole.
    let target = try Repository(path: folder.database)
      .list("target", metadata: RawJSON.self, item: RawJSON.self)
    try check(
      try target.numberOfItems(inSection: 0) == operations,
      "B27: the target list does not hold the batch's items alone")
    let after = try probed(hold)
    func figure(_ value: Double) -> String { String(format: "%.2f", value) }
    return attacks.map { attack in
      let ratio = attack.stats.p99 / idle.p99
      return Row(
        id: "B27",
        name: "/healthz p99 under attack: \(attack.name)",
        unit: "ms", value: attack.stats, baseline: idle, ratio: ratio,
        target: "p99 ≤ 50 ms and ≤ 10 × idle", pass: attack.stats.p99 <= 50 && ratio <= 10,
        note:
          "ratio is p99 ÷ the idle server's p99: \(figure(attack.stats.p99)) ms against "
          + "\(figure(idle.p99)) ms (idle, measured first in the same run); a new connection "
          + "every 10 ms, connect to last byte, "
          + "\(attack.stats.count) probes; the server with a tokens file and ulimit -n 1024; "
          + "after all attacks, p99 \(figure(after.p99)) ms")
    }
  }
}

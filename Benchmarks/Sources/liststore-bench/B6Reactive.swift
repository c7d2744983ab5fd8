import ReactiveCore

/// B6: values through `PublishSubject → map → scan → subscriber` against the same three
/// closures called in a plain loop.
enum ReactiveBenchmark {
  /// The three stages, as closures the optimizer cannot see into: they are made by a
  /// function it may not inline, from a factor it only learns at run time.
  struct Stages {
    var transform: (Int) -> Int
    var accumulate: (Int, Int) -> Int
    var sink: (Int) -> Void
  }

  /// Where the subscriber puts each value, so that no stage is dead code.
  final class Sink {
    var last = 0
    var count = 0
  }

  @inline(never)
  static func makeStages(factor: Int, sink: Sink) -> Stages {
    Stages(
      transform: { $0 &* factor &+ 1 },
      accumulate: { $0 &+ $1 },
      sink: { value in
        sink.last = value
        sink.count &+= 1
      })
  }

  static func run(_ options: Options, scratch: String) throws -> [Row] {
    let count = options.quick ? 1_000_000 : 10_000_000
    let sink = Sink()
    // 3, unless someone passes a thousand arguments: the optimizer cannot know.
    let stages = makeStages(factor: CommandLine.arguments.count > 1_000 ? 5 : 3, sink: sink)
    var results = (pipeline: 0, loop: 0)
    let times = try sideBySide(
      warmups: 1, runs: options.quick ? 3 : 5,
      subject: {
        sink.count = 0
        let subject = PublishSubject<Int>()
        let subscription = subject.map(stages.transform)
          .scan(0, accumulator: stages.accumulate)
          .subscribe(onNext: stages.sink)
        defer { subscription.dispose() }
        let time = seconds {
          for value in 0..<count { subject.onNext(value) }
        }
        try check(sink.count == count, "B6: \(sink.count) of \(count) values arrived")
        results.pipeline = sink.last
        return time
      },
      baseline: {
        seconds {
          var accumulated = 0
          for value in 0..<count {
            accumulated = stages.accumulate(accumulated, stages.transform(value))
            stages.sink(accumulated)
          }
          results.loop = sink.last
        }
      })
    try check(results.pipeline == results.loop, "B6: the pipeline and the loop disagree")
    let pipeline = Stats(times.subject).scaled(by: 1e9 / Double(count))
    let loop = Stats(times.baseline).scaled(by: 1e9 / Double(count))
    let ratio = pipeline.median / loop.median
    return [
      Row(
        id: "B6", name: "\(count / 1_000_000)M values: subject → map → scan → subscriber",
        unit: "ns/value", value: pipeline, baseline: loop, ratio: ratio,
        target: "≤ 10 × the plain loop", pass: ratio <= 10,
        note: "baseline: the same three closures, held in a struct made by an @inline(never) "
          + "factory, called in a for loop")
    ]
  }
}

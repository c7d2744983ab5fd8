import ListStore
import ListStoreClient

/// `liststore clone` and `sync`: a replica's file, written offline, synced with its server
/// (docs/replicas.md).
enum ReplicaCommands {
  static let clone = CommandSpec(
    path: ["clone"],
    abstract: "Make FILE a replica of a server's lists, to read and write offline.",
    discussion: """
      Registers a replica with the server (a read-only token makes a read-only replica),
      reads every row of the lists it follows into a temporary file beside FILE, and
      renames it into place once whole: a cut clone leaves nothing that looks like a
      replica. Without --list it follows every list the token may read, lists created
      later included. The token comes from --token, else LISTSTORE_TOKEN. Every other
      command then works on FILE (--db FILE), offline; 'liststore sync' pushes its writes
      and pulls the server's. Exit status: 0 done, 75 the server cannot be reached or
      answers 5xx, 76 it does not speak the replica's protocol, 77 the token is missing,
      unknown or revoked, 1 anything else.
      """,
    arguments: [
      ArgumentSpec(name: "URL", help: "The server, e.g. http://localhost:8040."),
      ArgumentSpec(name: "FILE", help: "The replica's new file."),
    ],
    options: [
      OptionSpec(
        name: "list", valueName: "NAMES",
        help: "The lists to follow, comma-separated (default: every list the token may read).")
    ],
    database: .reads,
    run: { invocation, context in
      let names =
        invocation.option("list")?.split(separator: ",").map {
          String($0).trimmingCharacters(in: .whitespaces)
        } ?? []
      let path = invocation.argument("FILE")
      let summary = try replicaErrors {
        try ReplicaSync.clone(
          server: invocation.argument("URL"), path: path, lists: names, token: context.serverToken)
      }
      context.out.line("cloned \(summary.pulled) rows into \(path), at seq \(summary.seq)")
    })

  static let sync = CommandSpec(
    path: ["sync"],
    abstract: "Push a replica's writes to its server and pull the server's changes.",
    discussion: """
      Works on a replica's file (--db FILE, made by 'liststore clone'): pushes the writes
      made since the last sync — each applied once on the server, or rejected with a
      reason — then pulls the server's changes and replays the writes it has not applied
      yet on them. Prints one line: writes pushed (of them rejected), changes pulled, the
      seq reached. Writes the server acknowledged leave the outbox; the rest stay for the
      next sync. Exit status: 0 done, 75 the server cannot be reached or answers 5xx, 76
      it does not speak the replica's protocol, 77 the token is missing, unknown or
      revoked, 1 anything else.
      """,
    database: .changes,
    run: { _, context in
      let repository = try context.repository()
      let summary = try replicaErrors {
        try ReplicaSync.sync(repository, token: context.serverToken)
      }
      for rejected in summary.rejected {
        context.err.line("rejected write \(rejected.number) (\(rejected.code)): \(rejected.error)")
      }
      context.out.line(
        "pushed \(summary.pushed) writes (\(summary.rejected.count) rejected), pulled "
          + "\(summary.pulled) changes, at seq \(summary.seq)"
          + (summary.reset ? " (a reset: the server no longer kept this replica's position)" : ""))
    })

  /// Runs `body`, turning a sync's failure into the command's exit status.
  private static func replicaErrors<Result>(_ body: () throws -> Result) throws -> Result {
    do {
      return try body()
    } catch let error as ReplicaSyncError {
      let status: Int32 =
        switch error.kind {
        case .unreachable: 75
        case .protocolTooNew: 76
        case .unauthorized: 77
        case .other: 1
        }
      throw CommandError(error.description, status: status)
    }
  }
}

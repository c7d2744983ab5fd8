import Foundation
import ListStoreTesting
import PostgreSQLKit
import ReactiveCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

extension TestPostgresServer {
  // MARK: - Availability

  /// Why PostgreSQL tests cannot run here, naming the install command; `nil` when the
  /// server binaries are present.
  public static var unavailableReason: String? {
    switch discoveredBinaries {
    case .success: return nil
    case .failure(let failure): return failure.description
    }
  }

  /// Whether `LISTSTORE_REQUIRE_POSTGRES=1` (or `LISTSTORE_REQUIRE_ALL=1`) is set: then
  /// missing server binaries make the tests fail (when they start the server) instead of
  /// being skipped.
  public static var isRequired: Bool {
    ProcessInfo.processInfo.environment["LISTSTORE_REQUIRE_POSTGRES"] == "1"
      || Prerequisites.requireAll
  }

  /// Whether PostgreSQL tests should run: the binaries are present, or they are
  /// required (and then fail, naming the install command, when they are missing).
  public static var testsEnabled: Bool { unavailableReason == nil || isRequired }

  /// The reason to show for skipped tests.
  public static var skipComment: String {
    unavailableReason ?? "PostgreSQL is available"
  }

  struct Binaries: Sendable {
    var directory: String
    /// The command prefix that runs a program as the server's owner (`runuser` as
    /// root; nothing otherwise).
    var runAs: [String]
    /// The owner's user and group ids, when running as root.
    var owner: (uid: uid_t, gid: gid_t)?

    func command(_ program: String, _ arguments: [String]) -> [String] {
      runAs + [directory + "/" + program] + arguments
    }
  }

  static let discoveredBinaries: Result<Binaries, Failure> = discoverBinaries()

  private static func discoverBinaries() -> Result<Binaries, Failure> {
    let install = "install them with `\(installCommand)`"
    var candidates: [String] = []
    if let directory = ProcessInfo.processInfo.environment["LISTSTORE_POSTGRES_BINDIR"] {
      // Another installation's programs; then only those.
      candidates.append(directory)
    } else if let directory = pgConfigBindir() {
      candidates.append(directory)
    }
    // Debian keeps each major version's binaries apart; newest first.
    let versions =
      (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))
      ?? []
    for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) })
    where ProcessInfo.processInfo.environment["LISTSTORE_POSTGRES_BINDIR"] == nil {
      candidates.append("/usr/lib/postgresql/\(version)/bin")
    }
    let programs = ["initdb", "pg_ctl", "postgres"]
    guard
      let directory = candidates.first(where: { directory in
        programs.allSatisfy { FileManager.default.isExecutableFile(atPath: directory + "/" + $0) }
      })
    else {
      return .failure(
        Failure(
          "PostgreSQL's server programs (initdb, pg_ctl, postgres) were not found in "
            + (ProcessInfo.processInfo.environment["LISTSTORE_POSTGRES_BINDIR"].map {
              "$LISTSTORE_POSTGRES_BINDIR (\($0))"
            } ?? "`pg_config --bindir` or /usr/lib/postgresql/*/bin") + "; \(install)"))
    }
    guard geteuid() == 0 else { return .success(Binaries(directory: directory, runAs: [])) }
    // initdb refuses root: run the server programs as `postgres`.
    guard let user = getpwnam(superuser) else {
      return .failure(
        Failure("running as root, and there is no `postgres` user to run the server as; \(install)")
      )
    }
    guard
      let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: {
        FileManager.default.isExecutableFile(atPath: $0)
      })
    else {
      return .failure(Failure("running as root, and `runuser` (util-linux) is missing"))
    }
    return .success(
      Binaries(
        directory: directory, runAs: [runuser, "-u", superuser, "--"],
        owner: (user.pointee.pw_uid, user.pointee.pw_gid)))
  }

  /// `pg_config --bindir`, when `pg_config` is on `PATH`.
  private static func pgConfigBindir() -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    guard
      let pgConfig = path.split(separator: ":").map({ $0 + "/pg_config" }).first(where: {
        FileManager.default.isExecutableFile(atPath: $0)
      })
    else { return nil }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: pgConfig)
    process.arguments = ["--bindir"]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    return text.isEmpty ? nil : text
  }
}

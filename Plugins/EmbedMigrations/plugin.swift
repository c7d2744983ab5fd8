import Foundation
import PackagePlugin

/// Compiles the top-level `migrations/NNNN_name.sql` files into the target as Swift
/// string literals, so the schema travels inside the binary and the CLI works from
/// any directory, also after the source tree is gone.
///
/// The command declares exactly the `.sql` files as inputs and the one Swift file as
/// output, so SwiftPM runs it only when a migration (or the tool) changed; the tool
/// leaves an output whose text would not change untouched, so an unchanged tree
/// compiles nothing.
@main
struct EmbedMigrations: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
    // Each engine's target embeds its own folder: `migrations/` for SQLite,
    // `migrations/postgresql/` for PostgreSQL.
    let folder = context.package.directoryURL.appending(
      path: target.name.hasSuffix("PostgreSQL") ? "migrations/postgresql" : "migrations")
    let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
      .filter { $0.hasSuffix(".sql") }
      .sorted()
    let inputs = names.map { folder.appending(path: $0) }
    let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedMigrations.swift")
    return [
      .buildCommand(
        displayName: "Embedding \(inputs.count) migrations into \(target.name)",
        executable: try context.tool(named: "migration-embedder").url,
        arguments: [output.path] + inputs.map(\.path),
        inputFiles: inputs,
        outputFiles: [output]
      )
    ]
  }
}

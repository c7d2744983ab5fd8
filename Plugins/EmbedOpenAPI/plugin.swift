import Foundation
import PackagePlugin

/// Compiles `docs/openapi.json` into the server's target as a string literal
/// (`OpenAPIDocument.text`), so that `GET /v1/openapi.json` serves the document the
/// repository holds, from any directory.
@main
struct EmbedOpenAPI: BuildToolPlugin {
  func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
    let input = context.package.directoryURL.appending(path: "docs/openapi.json")
    let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
    return [
      .buildCommand(
        displayName: "Embedding docs/openapi.json into \(target.name)",
        executable: try context.tool(named: "document-embedder").url,
        arguments: [output.path, input.path, "OpenAPIDocument"],
        inputFiles: [input],
        outputFiles: [output]
      )
    ]
  }
}

import ListStoreCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

// Only the variables liststore reads, with getenv: building the whole environment
// dictionary is a noticeable part of a short command's run time.
var environment: [String: String] = [:]
for name in ListStoreCommand.environmentVariables {
  if let value = getenv(name) { environment[name] = String(cString: value) }
}
exit(
  ListStoreCommand.main(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: environment))

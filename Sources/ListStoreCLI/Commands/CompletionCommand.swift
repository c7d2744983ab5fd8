import ListStore
import ListStoreFormats

/// `liststore completion SHELL`: a completion script for bash, zsh or fish. Each script
/// is a few lines that hand the words typed so far to `liststore __complete` and offer
/// what it prints, so that what completes — commands, options, list names, `#ID`s —
/// comes from the command table and the database, the same for every shell.
enum CompletionCommand {
  static let shells = ["bash", "zsh", "fish"]

  static let spec = CommandSpec(
    path: ["completion"], abstract: "Print a shell completion script (bash, zsh or fish).",
    discussion: """
      Completes commands, options, list names, and the #IDs of a list's sections and of
      its first 100 items, read from the database that --db (or $LISTSTORE_DB) names.
      Load it for the current shell, or install it for every new one:
        bash:  source <(liststore completion bash)
               liststore completion bash > ~/.local/share/bash-completion/completions/liststore
        zsh:   source <(liststore completion zsh)
               liststore completion zsh > "${fpath[1]}/_liststore"
        fish:  liststore completion fish | source
               liststore completion fish > ~/.config/fish/completions/liststore.fish
      """,
    arguments: [ArgumentSpec(name: "SHELL", help: "bash, zsh or fish.")],
    database: .reads,
    run: { invocation, context in
      let shell = invocation.argument("SHELL")
      guard let script = script(for: shell) else {
        throw UsageError(
          message: "unknown shell \(quoted(shell)); completion knows bash, zsh and fish",
          command: ["completion"])
      }
      context.out.line(script)
    })

  /// The script that loads completion into `shell`, or `nil` for a shell it does not know.
  static func script(for shell: String) -> String? {
    switch shell {
    case "bash":
      // Words are split as bash splits them; `#` at the start of a word would begin a
      // comment, so candidates for it are escaped.
      """
      # liststore completion for bash: source <(liststore completion bash)
      _liststore() {
        local IFS=$'\\n'
        COMPREPLY=($(liststore __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
        COMPREPLY=("${COMPREPLY[@]/#\\#/\\\\#}")
      }
      complete -o default -F _liststore liststore
      """
    case "zsh":
      """
      #compdef liststore
      # liststore completion for zsh: source <(liststore completion zsh), or save it as
      # _liststore in a folder of $fpath.
      _liststore() {
        local -a candidates
        candidates=("${(@f)$(liststore __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
        if (( ${#candidates} )) && [[ -n ${candidates[1]} ]]; then
          compadd -- "${candidates[@]}"
        else
          _files
        fi
      }
      if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
        _liststore "$@"
      elif (( $+functions[compdef] )); then
        compdef _liststore liststore
      else
        print -u2 "liststore completion needs zsh's completion system; run" \
          "'autoload -Uz compinit && compinit' first (as most .zshrc files do)"
      fi
      """
    case "fish":
      """
      # liststore completion for fish: liststore completion fish | source
      function __liststore_complete
          set -l words (commandline -opc) (commandline -ct | string unescape)
          liststore __complete $words[2..-1] 2>/dev/null
      end
      complete -c liststore -f -a '(__liststore_complete)'
      """
    default: nil
    }
  }
}

/// What completes the word being typed, from the command table and the database.
struct Completer {
  let parser: ArgumentParser
  /// Reads list names and ids; `nil` when there is no database to read.
  let source: CompletionSource?

  /// The candidates for the last of `words` (the words after `liststore`, the last one
  /// being typed, possibly empty), each starting with what is typed.
  func candidates(_ words: [String]) -> [String] {
    // The shells pass words as typed: `'#`, `"my list"`, `\#4`.
    let words = words.map(Self.unquoted)
    guard let current = words.last else { return [] }
    let before = words.dropLast()
    // The words so far: options with their values, and the positional words.
    var positional: [String] = []
    var pendingOption: OptionSpec?
    var afterTerminator = false
    /// The command the positional words so far name, if any.
    func command() -> CommandSpec? {
      parser.commands.filter { Array(positional.prefix($0.path.count)) == $0.path }
        .max { $0.path.count < $1.path.count }
    }
    for word in before {
      if pendingOption != nil {
        pendingOption = nil
        continue
      }
      if afterTerminator || !word.hasPrefix("-") || word == "-" {
        positional.append(word)
      } else if word == "--" {
        afterTerminator = true
      } else if !word.contains("="),
        let option = option(named: word, among: parser.globalOptions + (command()?.options ?? [])),
        option.valueName != nil
      {
        pendingOption = option
      }
    }
    let command = command()
    let list = command.flatMap { command in
      command.arguments.firstIndex { $0.name == "LIST" }.flatMap { index in
        positional.indices.contains(command.path.count + index)
          ? positional[command.path.count + index] : nil
      }
    }
    let found: [String]
    if let pendingOption {
      found = values(for: pendingOption.name, placeholder: pendingOption.valueName, list: list)
    } else if current.hasPrefix("-") && !afterTerminator {
      let options = (command?.options ?? []) + parser.globalOptions
      found = options.map { "--" + $0.name } + ["--help"]
    } else if let command {
      let index = positional.count - command.path.count
      found =
        command.arguments.indices.contains(index)
        ? values(for: nil, placeholder: command.arguments[index].name, list: list) : []
    } else {
      // A command's words: those that follow the words typed so far.
      var next: [String] = positional.isEmpty ? ["help"] : []
      for command in parser.commands
      where command.path.count > positional.count
        && Array(command.path.prefix(positional.count)) == positional
      {
        let word = command.path[positional.count]
        if !next.contains(word) { next.append(word) }
      }
      found = next
    }
    return found.filter { $0.hasPrefix(current) }
  }

  /// A word as the command will receive it: without the quotes around it (the closing
  /// one may not be typed yet) or the backslashes before its characters.
  static func unquoted(_ word: String) -> String {
    if let quote = word.first, quote == "'" || quote == "\"" {
      var inside = word.dropFirst()
      if inside.last == quote { inside = inside.dropLast() }
      return String(inside)
    }
    var result = ""
    var escaped = false
    for character in word {
      if character == "\\" && !escaped {
        escaped = true
        continue
      }
      escaped = false
      result.append(character)
    }
    return result
  }

  private func option(named word: String, among options: [OptionSpec]) -> OptionSpec? {
    options.first { "--" + $0.name == word }
  }

  /// The values a placeholder takes: list names, ids, shells; none for free text.
  private func values(for option: String?, placeholder: String?, list: String?) -> [String] {
    switch (option, placeholder) {
    case (_, "LIST"), ("list", _): return (try? source?.listNames()) ?? []
    case (_, "SECTION"):
      return list.flatMap { try? source?.ids(of: $0, items: false) }?.map { "#\($0)" } ?? []
    case (_, "ITEM"):
      return list.flatMap { try? source?.ids(of: $0, items: true) }?.map { "#\($0)" } ?? []
    case (_, "SHELL"): return CompletionCommand.shells
    default: return []
    }
  }
}

/// The database, as completion reads it.
struct CompletionSource {
  /// How many item ids of a list are offered: its first items, in order, so that
  /// completing costs the same for a list of any size.
  static let itemLimit = 100

  let repository: Repository

  func listNames() throws -> [String] {
    try repository.lists().map(\.name)
  }

  /// The ids of a list's sections, or of its first ``itemLimit`` items.
  func ids(of list: String, items: Bool) throws -> [Int64] {
    let stored = try repository.list(list, metadata: RawJSON.self, item: RawJSON.self)
    return items
      ? try stored.leadingItemIDs(limit: Self.itemLimit)
      : try stored.sectionIDs()
  }
}

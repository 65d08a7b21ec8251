import ArgumentParser
import TuttiConfig
import TuttiFollower
import TuttiNet

/// `tutti-follower`: the same as `tutti follower`, in a binary that links only what a
/// follower needs (a fraction of the memory of the whole `tutti`).
struct TuttiFollowerMain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tutti-follower", abstract: FollowerCommand.configuration.abstract,
        discussion: "The follower of `tutti follower`, built alone: no control server, no web or TLS libraries, no full Foundation. Its options can live in follower.toml (see `tutti config example follower`) or TUTTI_* variables.")

    @OptionGroup var options: FollowerCommand

    func run() throws { try options.run() }
}

// The options' table made beforehand: a help dump at every start kept about 1 MB of code resident.
// And a plain command line is read without ArgumentParser (FollowerOptions): its parse kept
// another half megabyte resident. Anything else (help, a mistake) is ArgumentParser's to read
// and explain, as `tutti follower` does.
let table = FollowerCommand.optionTable
let settings = Configured.settings(root: TuttiFollowerMain.self, role: "follower", table: table)
if let options = FollowerOptions(arguments: settings.arguments, table: table), (try? options.validate()) != nil {
    do { try options.run(clock: SystemClock()) } catch { TuttiFollowerMain.exit(withError: error) }
} else {
    TuttiFollowerMain.main(Configured.checked(settings, root: TuttiFollowerMain.self))
}

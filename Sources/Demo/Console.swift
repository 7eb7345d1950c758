import Foundation

/// The demo's output, flushed line by line: piped into a log or a CI job, each line arrives when
/// it is printed, and a demo killed mid-run (`--kill-after`) has shown everything up to the kill.
///
/// (Swift 6 does not let code touch C's `stdout` to make it line-buffered with `setvbuf`, so
/// every line is flushed instead.)
enum Console {
    /// Prints `text` and a newline, and flushes it out.
    static func line(_ text: String = "") {
        print(text)
        fflush(nil)
    }

    /// Prints `text` without a newline (a progress line rewritten in place), and flushes it out.
    static func rewrite(_ text: String) {
        print(text, terminator: "")
        fflush(nil)
    }

    /// Writes `text` and a newline to standard error.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}

import Foundation

extension String {
    /// This message without its closing period and spaces, for quoting it inside a sentence of
    /// another message: the library's errors end with a period, and "failed: …." would read as
    /// two.
    var quotableInSentence: String {
        var text = Substring(self)
        while let last = text.last, last == "." || last == " " || last == "\n" { text.removeLast() }
        return String(text)
    }
}

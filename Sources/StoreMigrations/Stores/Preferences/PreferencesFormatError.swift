/// Why data is not a valid preferences file or cannot be written as one; the store wraps it in a
/// ``PreferencesStoreError`` naming the file.
struct PreferencesFormatError: Error {
    let reason: String
}

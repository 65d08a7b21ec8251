/// Whether two byte strings are equal, in a time that depends on their lengths only: no early
/// exit at the first difference, so how long a check takes says nothing of where a guessed
/// tag, key, proof or token goes wrong.
public func constantTimeEqual(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
    var difference = a.count ^ b.count
    for i in 0..<max(a.count, b.count) {
        let x = i < a.count ? a[a.startIndex + i] : 0
        let y = i < b.count ? b[b.startIndex + i] : 0
        difference |= Int(x ^ y)
    }
    return difference == 0
}

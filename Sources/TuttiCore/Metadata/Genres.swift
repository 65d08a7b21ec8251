/// ID3v1 genre numbers, which ID3v2 TCON frames also use ("(17)", "17", "(17)Rock").
enum Genres {
    static let names = [
        "Blues", "Classic Rock", "Country", "Dance", "Disco", "Funk", "Grunge", "Hip-Hop", "Jazz", "Metal",
        "New Age", "Oldies", "Other", "Pop", "R&B", "Rap", "Reggae", "Rock", "Techno", "Industrial",
        "Alternative", "Ska", "Death Metal", "Pranks", "Soundtrack", "Euro-Techno", "Ambient", "Trip-Hop",
        "Vocal", "Jazz+Funk", "Fusion", "Trance", "Classical", "Instrumental", "Acid", "House", "Game",
        "Sound Clip", "Gospel", "Noise", "AlternRock", "Bass", "Soul", "Punk", "Space", "Meditative",
        "Instrumental Pop", "Instrumental Rock", "Ethnic", "Gothic", "Darkwave", "Techno-Industrial",
        "Electronic", "Pop-Folk", "Eurodance", "Dream", "Southern Rock", "Comedy", "Cult", "Gangsta",
        "Top 40", "Christian Rap", "Pop/Funk", "Jungle", "Native American", "Cabaret", "New Wave",
        "Psychedelic", "Rave", "Showtunes", "Trailer", "Lo-Fi", "Tribal", "Acid Punk", "Acid Jazz", "Polka",
        "Retro", "Musical", "Rock & Roll", "Hard Rock",
    ]

    static func name(_ number: Int) -> String? {
        names.indices.contains(number) ? names[number] : nil
    }

    /// "(17)" or "17" becomes "Rock"; "(17)Rock and more" keeps the words; text stays text.
    static func resolve(_ value: String) -> String {
        var rest = Substring(value)
        var number: Int?
        if rest.hasPrefix("("), let close = rest.firstIndex(of: ")") {
            number = Int(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
        } else if let n = Int(rest) {
            return name(n) ?? value
        }
        if !rest.isEmpty { return String(rest) }
        return number.flatMap(name) ?? value
    }
}

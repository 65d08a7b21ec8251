import CFFmpeg
import TuttiCore

extension MediaDecoder {
    /// The container's text tags and the audio stream's (Ogg keeps its comments there).
    static func tags(of context: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>) -> TrackTags {
        var tags = TrackTags()
        for dictionary in [stream.pointee.metadata, context.pointee.metadata] {
            var entry: UnsafeMutablePointer<AVDictionaryEntry>?
            while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
                entry = next
                guard let key = next.pointee.key, let value = next.pointee.value else { continue }
                ContainerTags.apply(key: String(cString: key), value: String(cString: value), to: &tags)
            }
        }
        return tags
    }

    /// Cover art: the pictures attached to the file (ID3 APIC, FLAC PICTURE, MP4 covr,
    /// Vorbis METADATA_BLOCK_PICTURE), typed by what their bytes are, never by what the file
    /// says they are.
    static func pictures(of context: UnsafeMutablePointer<AVFormatContext>) -> [TrackTags.Picture] {
        var found: [TrackTags.Picture] = []
        for i in 0..<Int(context.pointee.nb_streams) {
            let s = context.pointee.streams[i]!.pointee
            guard s.disposition & AV_DISPOSITION_ATTACHED_PIC != 0, s.attached_pic.size > 0, let data = s.attached_pic.data else { continue }
            let bytes = Array(UnsafeBufferPointer(start: data, count: Int(s.attached_pic.size)))
            guard let mime = PictureKind.mimeType(of: bytes) else { continue }
            let comment = av_dict_get(s.metadata, "comment", nil, 0).flatMap { $0.pointee.value.map { String(cString: $0) } }
            found.append(TrackTags.Picture(mimeType: mime, kind: PictureKind.id3Type(comment) ?? (found.isEmpty ? 3 : 0),
                                           description: av_dict_get(s.metadata, "title", nil, 0)
                                               .flatMap { $0.pointee.value.map { String(cString: $0) } } ?? "",
                                           data: bytes))
        }
        return found
    }

    /// Everything the house shows of a file: its tags with their pictures and lyrics, and
    /// its length in frames of the house's rate. An ID3v2 tag is read by TuttiCore's own
    /// reader too (FFmpeg leaves out timed lyrics, SYLT); the container's tags fill in the rest.
    public static func probe(path: String) throws(MediaError) -> (tags: TrackTags, length: MediaFrames?) {
        let input = try FileInput(path: path)
        var tags = TrackTags()
        let tagLength = ID3Reader.tagLength(header: input.readBytes(10))
        if tagLength > 0, input.seek(to: 0) {
            tags = ID3Reader.read(input.readBytes(min(tagLength, 16 << 20)))
        }
        guard input.seek(to: 0) else { throw .cannotOpen(name: path, reason: "cannot read it from its start") }
        let decoder = try MediaDecoder(input: input, name: path, readPictures: true)
        var theirs = decoder.tags
        theirs.pictures = decoder.pictures
        tags.merge(theirs)
        // A picture is what its bytes are, whatever its tag declares (a "picture" that is an
        // HTML page is not one).
        tags.pictures = tags.pictures.compactMap { picture in
            PictureKind.mimeType(of: picture.data).map { TrackTags.Picture(mimeType: $0, kind: picture.kind, description: picture.description, data: picture.data) }
        }
        let length = decoder.length.map { MediaFrames(av_rescale($0.count, Int64(AudioFormat.sampleRate), Int64(max(1, $0.rate)))) }
        return (tags, length)
    }
}

"""Media, image and document converters whose operands and option values read, write, contact
hosts or run code: ffmpeg/ffprobe/ffplay (inputs, outputs, protocols, filter graphs and
scripts), ImageMagick (``convert``/``magick``/``mogrify``/``identify``…: pseudo-files such as
``msl:``, ``|cmd``, ``@list``), ghostscript, protoc (plugins, ``--*_out`` directories),
exiftool (in-place writes, Perl expressions), yt-dlp/youtube-dl (``--exec``), and small
converters given as :class:`~stockade.analyzer.models.Spec` rows (envsubst, cwebp, optipng …).
"""

from __future__ import annotations

import re

from stockade.analyzer.effects import UNKNOWN, show
from stockade.analyzer.exec import Invocation
from stockade.analyzer.models import Spec, parse_options, register, spec_model
from stockade.analyzer.models.devtools import FOREIGN, P, apply, foreign_file
from stockade.analyzer.models.fresh import known_content
from stockade.analyzer.models.net import contact_url

T = "text"

# -- ffmpeg ------------------------------------------------------------------------------------

#: ffmpeg's options that take no value (every other option takes one: ffmpeg has hundreds)
_FF_FLAGS = frozenset({
    "-y", "-n", "-stats", "-nostats", "-nostdin", "-stdin", "-hide_banner", "-re", "-shortest", "-an", "-vn", "-sn",
    "-dn", "-copyts", "-start_at_zero", "-accurate_seek", "-noaccurate_seek", "-autorotate", "-noautorotate",
    "-autoscale", "-noautoscale", "-benchmark", "-benchmark_all", "-dump", "-hex", "-xerror", "-ignore_unknown",
    "-copy_unknown", "-debug_ts", "-intra", "-vstats", "-psnr", "-qphist", "-deinterlace", "-sameq", "-report",
    "-version", "-buildconf", "-formats", "-muxers", "-demuxers", "-devices", "-codecs", "-decoders", "-encoders",
    "-bsfs", "-protocols", "-filters", "-pix_fmts", "-layouts", "-sample_fmts", "-colors", "-hwaccels", "-L",
    "-h", "-?", "-help", "--help", "-fix_sub_duration", "-bitexact", "-find_stream_info", "-nofind_stream_info",
    "-ignore_chapters", "-apad", "-print_graphs", "-show_format", "-show_streams", "-show_packets", "-show_frames",
    "-show_error", "-show_data", "-show_programs", "-show_chapters", "-show_private_data", "-show_versions",
    "-show_library_versions", "-show_program_version", "-show_pixel_formats", "-count_frames", "-count_packets",
    "-pretty", "-unit", "-prefix", "-byte_binary_prefix", "-sexagesimal", "-show_log", "-fs", "-nodisp",
    "-noborder", "-alwaysontop", "-autoexit", "-exitonkeydown", "-exitonmousedown", "-fast", "-genpts",
    "-infbuf", "-framedrop", "-noframedrop", "-sync", "-disable_audio", "-disable_video",
})
#: options whose value is a file the tool reads (as a list, script or attachment)
_FF_READS = {"-filter_script": "filter", "-filter_complex_script": "filter", "-attach": "read",
             "-hls_key_info_file": "read", "-sdp_file_in": "read", "-passlogfile_in": "read"}
#: options whose value is a file the tool writes
_FF_WRITES = frozenset({"-dump_attachment", "-vstats_file", "-sdp_file", "-passlogfile", "-hls_segment_filename",
                        "-segment_list", "-master_pl_name", "-stats_enc_pre", "-stats_enc_post", "-stats_mux_pre",
                        "-o"})
#: options whose value is a filter graph (``movie=FILE`` and friends read files)
_FF_FILTERS = frozenset({"-vf", "-af", "-filter", "-filter_complex", "-lavfi"})
#: filters that read a file named by an option, and the option names that do
_FILTER_FILE_RE = re.compile(
    r"(?:^|[,;\[\]]\s*)(?:a?movie|sendcmd|asendcmd|subtitles|ass|drawtext|lut3d|lut1d|haldclut|sofalizer|"
    r"ladspa|lv2|frei0r|frei0r_src|dnn_processing|arnndn|zmq|azmq|coreimage|libplacebo|vmafmotion|libvmaf|"
    r"ocr|owdenoise|afir|headphone|showspectrumpic|interleave)\b[^,;]*")
_FILTER_PATH_RE = re.compile(r"(?:^|[=:])\s*(?:filename|f|file|textfile|fontfile|sofa|model|filter_params|"
                             r"log_path|stats_file|datapath|custom_shader_path|path)?\s*=?\s*'?([^:',;\[\]=]*/[^:',;\[\]=]*"
                             r"|[^:',;\[\]=]+\.(?:txt|srt|ass|ssa|vtt|cube|3dl|png|jpg|mp4|mkv|wav|so|model|pb|onnx|"
                             r"rnnn|sofa|cmd|ttf|otf|json|xml))'?")
_PLUGIN_FILTERS = ("ladspa", "lv2", "frei0r", "dnn_processing", "coreimage")
_NETWORK_SCHEMES = ("http", "https", "tcp", "udp", "rtmp", "rtmps", "rtmpt", "rtmpe", "rtp", "rtsp", "rtsps", "srt",
                    "ftp", "sftp", "tls", "mmsh", "mmst", "icecast", "gopher", "gophers", "hls", "zmq", "rist",
                    "srtp", "ws", "wss", "ipfs", "ipns", "smb", "librtmp", "prompeg", "amqp", "webdav", "dav")
_WRAPPING_SCHEMES = ("cache", "async", "crypto", "subfile", "gzip")
_FF_STDIO = frozenset({"-", "pipe:", "pipe:0", "pipe:1", "pipe:2", "/dev/null", "/dev/stdout", "/dev/stderr",
                       "/dev/stdin", "nul", "NUL"})


def ff_url(inv: Invocation, word: str, index: int | None, write: bool, what: str = "ffmpeg") -> None:
    """An ffmpeg input or output: a file, ``file:PATH``, ``concat:A|B``, a network URL, ``pipe:``."""
    if word in _FF_STDIO or word.startswith(("pipe:", "fd:")):
        return
    scheme, colon, rest = word.partition(":")
    scheme = scheme.lower()
    if colon and scheme in ("concat", "concatf"):
        parts = rest.split("|")
        if scheme == "concatf":  # `concatf:LIST`: a file naming the parts
            inv.read(rest, index)
            inv.unknown(f"`{what}` reads the files `{show(rest)}` names, which are not visible", index)
            return
        for part in parts:
            ff_url(inv, part, index, write, what)
        return
    if colon and scheme in _WRAPPING_SCHEMES:  # `cache:URL`, `subfile,,start,…:FILE` (options before the last colon)
        ff_url(inv, rest.rpartition(":")[2] if scheme == "subfile" else rest, index, write, what)
        return
    if colon and scheme == "file":
        path = rest[2:] if rest.startswith("//") else rest
        (inv.write if write else inv.read)(path, index)
        return
    if colon and scheme == "data":
        return
    if colon and scheme in ("unix",):
        (inv.write if write else inv.read)(rest, index)
        return
    if colon and (scheme.split("+")[0] in _NETWORK_SCHEMES or rest.startswith("//")):
        if UNKNOWN in word:
            inv.unknown(f"`{what}` contacts a host that is not known (`{show(word)}`)", index)
            return
        url = word if "://" in word else scheme + "://" + rest.lstrip("/")
        contact_url(inv, url.replace(scheme.split("+")[0] + "+", "", 1) if "+" in scheme else url, index, 443)
        return
    (inv.write if write else inv.read)(word, index)


def ff_filters(inv: Invocation, graph: str, index: int | None, what: str) -> None:
    """A filter graph: sources that read files (``movie=F``, ``subtitles=F``, ``drawtext=textfile=F``)
    read them; plugin filters (``ladspa``, ``frei0r``) load code from a library file."""
    if UNKNOWN in graph:
        inv.unknown(f"the {what} filter graph is not known before it runs", index)
        return
    for match in _FILTER_FILE_RE.finditer(graph):
        text = match.group(0).lstrip(",;[] ")
        name = text.split("=", 1)[0].strip()
        if name in _PLUGIN_FILTERS:
            inv.unknown(f"the `{name}` filter loads code from a library", index)
        for found in _FILTER_PATH_RE.finditer(text[len(name):]):
            path = found.group(1).strip()
            if path and not path.isdigit():
                ff_url(inv, path, index, False, what)


def model_ffmpeg(inv: Invocation) -> None:
    """``ffmpeg [OPTIONS] [-i INPUT]… OUTPUT…``: ``-i`` values are inputs (files, ``file:``,
    ``concat:``, network URLs; with ``-f lavfi`` a filter graph), every word that is not an
    option or its value is an output written (a URL output contacts its host); filter graphs
    and ``-filter_script`` files read what they name; ``-dump_attachment`` and the log and
    list options write; ffprobe and ffplay read their operands the same way."""
    argv = inv.argv
    name = inv.name
    reader = name in ("ffprobe", "ffplay")
    fmt: str | None = None
    safe = True
    outputs: list[tuple[str, int]] = []
    last_value: tuple[str, int] | None = None
    index = 1
    while index < len(argv):
        word = argv[index]
        if word[:1] != "-" or word in ("-", "--"):
            if word != "--" and fmt == "tee" and not reader:  # `-f tee "a.mkv|[f=mpegts]udp://h:p"`
                outputs.extend((re.sub(r"^\[[^\]]*\]", "", part), index) for part in word.split("|"))
            elif word != "--":
                outputs.append((word, index))
            last_value = None
            fmt = None
            index += 1
            continue
        option = word.split(":", 1)[0]  # `-c:v`, `-dump_attachment:t:0`, `-filter:v`
        if option.startswith("-/"):  # `-/vf FILE`: the option's value is read from FILE
            if index + 1 < len(argv):
                foreign_file(inv, argv[index + 1], index + 1, f"`{name} {word}`")
                inv.unknown(f"`{name} {word}` reads its value from a file that is not visible", index + 1)
            index += 2
            continue
        if option in _FF_FLAGS or index + 1 >= len(argv):
            index += 1
            continue
        value, at = argv[index + 1], index + 1
        index += 2
        last_value = (value, at)
        if option == "-i":
            if fmt == "lavfi":
                ff_filters(inv, value, at, f"`{name} -f lavfi`")
            elif fmt in ("concat",):
                text = known_content(inv.walker, inv.path(value))
                inv.read(value, at)
                if text is None and not safe:
                    inv.unknown(f"`{name} -f concat -safe 0` reads the files `{show(value)}` lists, which are "
                                "not visible", at)
                for line in (text or "").splitlines():
                    item = line.strip()
                    if item.startswith("file "):
                        ff_url(inv, item[5:].strip().strip("'\""), at, False, name)
            else:
                ff_url(inv, value, at, False, name)
            fmt, safe = None, True
        elif option == "-f":
            fmt = value
        elif option == "-safe":
            safe = value not in ("0", "false")
        elif option in _FF_FILTERS:
            ff_filters(inv, value, at, f"`{name} {option}`")
        elif option in _FF_READS:
            if _FF_READS[option] == "filter":
                foreign_file(inv, value, at, f"`{name} {option}`")
                text = known_content(inv.walker, inv.path(value))
                if text is not None:
                    ff_filters(inv, text, at, f"`{name} {option}`")
                else:
                    inv.unknown(f"the filters in `{show(value)}` (`{name} {option}`) are not visible", at)
            else:
                inv.read(value, at)
        elif option in _FF_WRITES or option == "-progress":
            ff_url(inv, value, at, True, name)
    if not outputs and last_value is not None and not reader:
        outputs.append(last_value)  # (at least one output is required: the last word is one)
    for word, at in outputs:
        ff_url(inv, word, at, not reader, name)


register("ffmpeg ffprobe ffplay avconv avprobe", model_ffmpeg)

# -- ImageMagick ---------------------------------------------------------------------------------

#: ImageMagick options that take a value (two for those listed in _IM_TWO); the rest are flags
_IM_VALUES = frozenset({
    "-adaptive-blur", "-adaptive-resize", "-adaptive-sharpen", "-affine", "-alpha", "-annotate", "-attenuate",
    "-authenticate", "-auto-threshold", "-background", "-bench", "-bias", "-black-threshold", "-blue-primary",
    "-blue-shift", "-blur", "-border", "-bordercolor", "-brightness-contrast",
    "-canny", "-caption", "-cdl", "-channel", "-channel-fx", "-charcoal", "-chop", "-clip-path", "-clone", "-clut",
    "-color-matrix", "-colorize", "-colors", "-colorspace", "-comment", "-compose", "-compress", "-connected-components",
    "-contrast-stretch", "-convolve", "-crop", "-cycle", "-debug", "-decipher", "-define", "-delay", "-delete",
    "-density", "-depth", "-deskew", "-direction", "-displace", "-display", "-dispose", "-dissimilarity-threshold",
    "-dissolve", "-distort", "-dither", "-draw", "-duplicate", "-edge", "-emboss", "-encipher", "-encoding",
    "-endian", "-evaluate", "-evaluate-sequence", "-extent", "-extract", "-family", "-features", "-fill", "-filter",
    "-font", "-format", "-frame", "-function", "-fuzz", "-fx", "-gamma", "-gaussian-blur", "-geometry",
    "-gravity", "-green-primary", "-hough-lines", "-implode", "-insert", "-intensity", "-intent",
    "-interlace", "-interline-spacing", "-interpolate", "-interword-spacing", "-kerning", "-kuwahara", "-label",
    "-lat", "-layers", "-level", "-level-colors", "-limit", "-linear-stretch", "-liquid-rescale", "-list", "-log",
    "-loop", "-lowlight-color", "-highlight-color", "-map", "-mattecolor", "-mean-shift", "-median", "-metric",
    "-mode", "-modulate", "-morphology", "-motion-blur", "-noise", "-opaque", "-ordered-dither", "-orient",
    "-page", "-paint", "-path", "-perceptible", "-pointsize", "-polaroid", "-poly", "-posterize",
    "-precision", "-preview", "-print", "-process", "-profile", "-quality", "-quantize", "-radial-blur", "-raise",
    "-random-threshold", "-range-threshold", "-read", "-red-primary", "-region", "-remap", "-repage", "-resample",
    "-resize", "-roll", "-rotate", "-sample", "-sampling-factor", "-scale", "-scene", "-seed", "-segment",
    "-selective-blur", "-sepia-tone", "-set", "-shade", "-shadow", "-sharpen", "-shave", "-shear",
    "-sigmoidal-contrast", "-similarity-threshold", "-size", "-sketch", "-smush", "-solarize", "-sparse-color",
    "-splice", "-spread", "-statistic", "-stretch", "-stroke", "-strokewidth", "-style", "-swap", "-swirl",
    "-texture", "-threshold", "-thumbnail", "-tile", "-tile-offset", "-tint", "-title", "-transparent",
    "-transparent-color", "-treedepth", "-type", "-undercolor", "-unsharp", "-units", "-vignette", "-virtual-pixel",
    "-wave", "-wavelet-denoise", "-weight", "-white-point", "-white-threshold", "-window", "-write", "-script",
    "-monitor-interval", "-stegano", "-stereo",
    "-word-break", "-morph", "-quiet-level", "-complex", "-grayscale", "-kernel",
})
_IM_TWO = frozenset({"-annotate", "-distort", "-evaluate", "-function", "-limit", "-morphology", "-sparse-color",
                     "-statistic", "-set", "-level-colors"})
_IM_PLUS_VALUES = frozenset({"-write", "-profile", "-define", "-set", "-channel-fx"})
_IM_SUBCOMMANDS = frozenset({"convert", "mogrify", "identify", "composite", "montage", "compare", "stream",
                             "display", "animate", "import", "conjure", "magick-script"})
#: pseudo-file prefixes that are not files: generated images and builtins
_IM_GENERATED = frozenset({"xc", "canvas", "gradient", "radial-gradient", "pattern", "plasma", "fractal", "rose",
                           "logo", "wizard", "granite", "netscape", "null", "magick", "hald", "label", "caption",
                           "tile", "inline", "clipboard", "x", "win", "screenshot", "info", "histogram", "print",
                           "scan", "stdin", "stdout", "fd"})
_IM_NETWORK = ("http", "https", "ftp", "url")


def _im_file(inv: Invocation, word: str, index: int | None, write: bool) -> None:
    """One ImageMagick file operand: ``FMT:path``, ``path[frames]``, or a pseudo-file —
    ``|cmd`` runs a command, ``msl:``/``@list`` run or read what is not visible, ``label:@F``
    and ``text:F`` read F, ``ephemeral:F`` reads and deletes it, URLs contact a host."""
    if word in ("-", "") or word == UNKNOWN:
        return
    if word.startswith("|"):  # a pipe: the rest is a shell command
        inv.script(word[1:], index, what=f"the `{inv.name}` pipe")
        return
    if word.startswith("@"):  # a file of file names (or of arguments)
        text = known_content(inv.walker, inv.path(word[1:]))
        inv.read(word[1:], index)
        if text is None:
            inv.unknown(f"`{inv.name}` reads the images `{show(word[1:])}` names, which are not visible", index)
        else:
            for name in text.split():
                _im_file(inv, name, index, False)
        return
    prefix, colon, rest = word.partition(":")
    lower = prefix.lower()
    if colon and len(prefix) > 1 and re.fullmatch(r"[A-Za-z0-9-]+", prefix):
        if lower in _IM_NETWORK or rest.startswith("//"):
            contact_url(inv, word if lower != "url" else rest, index, 443)
            return
        if lower in ("msl", "mvg", "svg", "msvg", "ps", "eps", "epsi", "pdf", "ai", "xps", "pcl") and not write:
            # a script or vector language that can read other files and (MSL) write them
            foreign_file(inv, rest, index, f"`{inv.name}` ({lower}:)")
            if lower == "msl":
                inv.unknown(f"`{inv.name}` runs the MSL script `{show(rest)}`, which can read and write any file",
                            index)
            return
        if lower in ("label", "caption", "pango") and rest.startswith("@"):
            inv.read(rest[1:], index)
            return
        if lower == "ephemeral":
            inv.read(rest, index)
            inv.delete(rest, index)
            return
        if lower in _IM_GENERATED:
            return
        word = rest
    if word.startswith("|"):
        inv.script(word[1:], index, what=f"the `{inv.name}` pipe")
        return
    word = re.sub(r"\[[^\]]*\]$", "", word)  # `in.gif[0]`, `in.jpg[64x64]`
    if word in ("-", ""):
        return
    (inv.write if write else inv.read)(word, index)


def model_imagemagick(inv: Invocation) -> None:
    """``convert|magick [OPTIONS] INPUT… OUTPUT``: the last operand is written, the others read
    (see :func:`_im_file` for pseudo-files); ``-write F`` writes, ``-read F``/``-profile F``
    read, ``-script F`` runs a script; ``mogrify`` rewrites its operands (``-path DIR``: into
    DIR, ``-format EXT``: next to them); ``identify``/``display`` only read; ``magick SUB``
    is the subcommand SUB."""
    argv = inv.argv
    name = inv.name
    start = 1
    if name in ("magick", "magick-script") and len(argv) > 1 and argv[1] in _IM_SUBCOMMANDS:
        name, start = argv[1], 2
    operands: list[tuple[str, int]] = []
    path_dir: tuple[str, int] | None = None
    new_format: str | None = None
    index = start
    while index < len(argv):
        word = argv[index]
        if word[:1] not in ("-", "+") or word in ("-", "+") or word == "(" or word == ")":
            if word not in ("(", ")", "\\(", "\\)"):
                operands.append((word, index))
            index += 1
            continue
        option = "-" + word[1:]
        if word[0] == "-":
            count = 2 if option in _IM_TWO else 1 if option in _IM_VALUES else 0
        else:  # (`+option` mostly resets: a few take a value)
            count = 2 if option == "-distort" else 1 if option in _IM_PLUS_VALUES else 0
        values = [(argv[i], i) for i in range(index + 1, min(index + 1 + count, len(argv)))]
        index += 1 + count
        for value, at in values:
            if option == "-write":
                _im_file(inv, value, at, True)
            elif option in ("-read", "-profile", "-texture", "-remap", "-cdl") and word[0] == "-":
                if not (option == "-profile" and not any(c in value for c in "./")):
                    _im_file(inv, value, at, False)
            elif option == "-script":
                foreign_file(inv, value, at, f"`{name} -script`")
                inv.unknown(f"`{name} -script` runs a script that can read and write any file", at)
            elif option == "-path":
                path_dir = (value, at)
            elif option == "-format" and name == "mogrify":
                new_format = value
            elif option in ("-draw", "-annotate", "-fx", "-print", "-comment", "-label", "-caption") and \
                    value.startswith("@"):
                inv.read(value[1:], at)  # `-draw @file`: the text is read from the file
            elif option == "-draw" and re.search(r"\bimage\b", value):
                for found in re.findall(r"['\"]([^'\"]+)['\"]", value):
                    _im_file(inv, found, at, False)
    if name in ("identify", "display", "animate"):
        for word, at in operands:
            _im_file(inv, word, at, False)
        return
    if name == "mogrify":
        for word, at in operands:
            _im_file(inv, word, at, False)
            if path_dir is not None:
                base = word.rstrip("/").rpartition("/")[2]
                if new_format and "." in base:
                    base = base.rpartition(".")[0] + "." + new_format
                _im_file(inv, path_dir[0].rstrip("/") + "/" + base, path_dir[1], True)
            elif new_format and "." in word:
                _im_file(inv, word.rpartition(".")[0] + "." + new_format, at, True)
            else:
                _im_file(inv, word, at, True)
        return
    if name == "import":  # `import [-window ID] FILE`: a screen capture written to FILE
        for word, at in operands[-1:]:
            _im_file(inv, word, at, True)
        return
    if not operands:
        return
    *inputs, output = operands
    if name in ("magick", "magick-script") and not inputs and output[1] == start:
        inputs, output = [output], ("", 0)  # (`magick in.png` alone: nothing written)
    for word, at in inputs:
        _im_file(inv, word, at, False)
    if output[0]:
        _im_file(inv, output[0], output[1], True)


register("convert magick magick-script mogrify identify composite montage compare stream display animate conjure",
         model_imagemagick)

# -- ghostscript ---------------------------------------------------------------------------------

_GS_OUTPUT_RE = re.compile(r"-s(?:OutputFile|OUTPUTFILE)=(.*)")


def model_gs(inv: Invocation) -> None:
    """ghostscript: ``-sOutputFile=F``/``-o F`` write (``%pipe%cmd``/``|cmd`` run a command);
    input files are read; ``-dNOSAFER``/``-dDELAYSAFER`` let the PostScript code read, write
    and run anything; ``-c CODE`` then runs such code."""
    argv = inv.argv
    unsafe = any(word in ("-dNOSAFER", "-dDELAYSAFER", "-dSAFER=false", "-dWRITESYSTEMDICT") for word in argv)
    index = 1
    code_follows = False
    while index < len(argv):
        word = argv[index]
        output = _GS_OUTPUT_RE.match(word)
        value: str | None = output.group(1) if output else None
        at = index
        if word == "-o" and index + 1 < len(argv):
            value, at = argv[index + 1], index + 1
            index += 1
        if value is not None:
            if value.startswith(("%pipe%", "|")):
                inv.script(value[6:] if value.startswith("%pipe%") else value[1:], at, what="the ghostscript pipe")
            elif value not in ("-", "%stdout", "%stdout%", "/dev/null"):
                inv.write(value.replace("%d", "1").replace("%03d", "001"), at)
        elif word == "-c":
            code_follows = True
        elif word == "-f":
            code_follows = False
        elif word in ("-I",) and index + 1 < len(argv):
            inv.read(argv[index + 1], index + 1, recursive=True)
            index += 1
        elif word[:1] != "-" and not code_follows:
            inv.read(word, index)
        index += 1
    if unsafe:
        inv.unknown("ghostscript runs PostScript with file and command access (`-dNOSAFER`)", None)


register("gs gsc gswin64c gswin32c ghostscript", model_gs)

# -- protoc --------------------------------------------------------------------------------------

#: protoc's own generators (any other `--NAME_out` runs a plugin program found on PATH)
_PROTOC_OUTPUTS = frozenset({"cpp", "csharp", "java", "kotlin", "objc", "php", "pyi", "python", "ruby", "rust",
                             "upb", "upbdefs", "upb_minitable"})


def model_protoc(inv: Invocation) -> None:
    """protoc: ``-I``/``--proto_path`` directories and ``.proto`` operands are read;
    ``--NAME_out=[OPTS:]DIR`` writes in DIR (or a ``.zip``/``.jar`` file); the
    descriptor and dependency outputs are written; ``--plugin=[NAME=]PATH`` runs a program;
    ``@FILE`` reads more arguments."""
    argv = inv.argv
    for index in range(1, len(argv)):
        word = argv[index]
        if word.startswith("@"):
            inv.read(word[1:], index)
            text = known_content(inv.walker, inv.path(word[1:]))
            if text is None:
                inv.unknown(f"`protoc` reads more arguments from `{show(word[1:])}`, which are not visible", index)
            continue
        if word.startswith("-I") and word != "-I":
            inv.read(word[2:], index, recursive=True)
            continue
        if word == "-I" or word == "--proto_path":
            continue
        if index > 1 and argv[index - 1] in ("-I", "--proto_path"):
            inv.read(word, index, recursive=True)
            continue
        name, eq, value = word.partition("=")
        if not word.startswith("--"):
            if word[:1] != "-":
                inv.read(word, index)
            continue
        if not eq:
            continue
        if name == "--proto_path":
            inv.read(value, index, recursive=True)
        elif name == "--plugin":
            program = value.partition("=")[2] if "=" in value else value
            apply(inv, P, program, index, "`protoc --plugin`")
        elif name in ("--descriptor_set_out", "--dependency_out", "--descriptor_set_in"):
            (inv.read if name == "--descriptor_set_in" else inv.write)(value, index)
        elif name.endswith("_out"):
            directory = value.rpartition(":")[2] if ":" in value else value
            inv.write(directory, index)  # (the files below it are named after the .proto operands)


register("protoc", model_protoc)

# -- exiftool ------------------------------------------------------------------------------------

_EXIF_VALUES = frozenset({"-o", "-out", "-w", "-W", "-p", "-printFormat", "-@", "-config", "-if", "-api",
                          "-d", "-dateFormat", "-c", "-coordFormat", "-charset", "-lang", "-sep", "-separator",
                          "-tagsFromFile", "-srcfile", "-fileOrder", "-x", "-exclude", "-ext", "-extension",
                          "-i", "-ignore", "-userParam", "-geotag", "-geosync", "-globalTimeShift", "-listItem",
                          "-efile", "-csvDelim", "-progress"})


def model_exiftool(inv: Invocation) -> None:
    """exiftool: operands are read, and written in place when tags are set (``-TAG=V``,
    ``-TAG<=FILE`` reads FILE, ``-tagsFromFile``), ``-o`` writes; ``-w`` writes files next to
    them; Perl runs in ``-if`` expressions, ``-api Filter=``, ``${TAG;EXPR}`` formats and
    ``-config`` files."""
    argv = inv.argv
    writes = False
    operands: list[tuple[str, int]] = []
    index = 1
    for at, word in enumerate(argv[1:], start=1):
        if "${" in word and ";" in word.partition("${")[2].partition("}")[0]:
            inv.unknown("an exiftool `${TAG;EXPR}` format runs Perl code", at)
    while index < len(argv):
        word = argv[index]
        if word[:1] != "-":
            operands.append((word, index))
            index += 1
            continue
        if "<=" in word:  # `-TAG<=FILE`: the tag's value is the file's content
            inv.read(word.partition("<=")[2], index)
            writes = True
        elif "=" in word or (word.endswith(("<", "+")) and "<" in word):
            writes = True
        option = word.split("=", 1)[0] if word.startswith("-api") else word
        if word in _EXIF_VALUES and index + 1 < len(argv):
            value, at = argv[index + 1], index + 1
            index += 2
            if word in ("-o", "-out", "-efile"):
                inv.write(value, at, recursive=value.endswith("/"))
                writes = True
            elif word in ("-@", "-srcfile", "-tagsFromFile", "-geotag"):
                inv.read(value, at)
                if word == "-@":
                    inv.unknown(f"exiftool reads more arguments from `{show(value)}`", at)
                if word == "-tagsFromFile":
                    writes = True
            elif word == "-config":
                foreign_file(inv, value, at, "`exiftool -config`")
                inv.unknown("an exiftool `-config` file is Perl code", at)
            elif word == "-if" or (word == "-api" and value.lower().startswith("filter")):
                inv.unknown(f"exiftool `{word}` evaluates Perl code", at)
            elif word in ("-w", "-W"):
                for name, where in operands:
                    inv.write(name.rpartition(".")[0] + ("." + value.lstrip(".") if "%" not in value else ".txt"),
                              where)
            elif word in ("-p", "-printFormat") and not value.startswith("$") and "$" not in value:
                inv.read(value, at)
            continue
        if option in ("-overwrite_original", "-overwrite_original_in_place", "-delete_original",
                      "-delete_original!"):
            writes = True
        index += 1
    for word, at in operands:
        inv.read(word, at, recursive=True)
        if writes:
            inv.write(word, at, recursive=True)


register("exiftool", model_exiftool)

# -- yt-dlp --------------------------------------------------------------------------------------

_YTDLP_VALUES = {
    "-o": "write", "--output": "write", "-P": "write", "--paths": "write", "-a": "read", "--batch-file": "read",
    "--cookies": "read", "--config-location": FOREIGN, "--config-locations": FOREIGN, "--exec": "script",
    "--exec-before-download": "script", "--ffmpeg-location": P, "--downloader": P, "--external-downloader": P,
    "--download-archive": "write", "--load-info-json": "read", "--cache-dir": "writer", "--proxy": "url",
    "-f": T, "--format": T, "-S": T, "--format-sort": T, "--merge-output-format": T, "--remux-video": T,
    "--recode-video": T, "--audio-format": T, "--audio-quality": T, "--postprocessor-args": T, "--ppa": T,
    "-r": T, "--limit-rate": T, "-R": T, "--retries": T, "--user-agent": T, "--referer": T, "--add-header": T,
    "-u": T, "--username": T, "-p": T, "--password": T, "--playlist-items": T, "-I": T, "--match-filters": T,
    "--sub-langs": T, "--sub-format": T, "--convert-subs": T, "--parse-metadata": T, "--replace-in-metadata": T,
    "--extractor-args": T, "--concurrent-fragments": T, "-N": T, "--sleep-interval": T, "--max-downloads": T,
    "--cookies-from-browser": "unknown:`yt-dlp --cookies-from-browser` reads a browser's cookie store",
    "--use-postprocessor": "unknown:`yt-dlp --use-postprocessor` loads a Python plugin",
}


def model_ytdlp(inv: Invocation) -> None:
    """yt-dlp/youtube-dl: URL operands are fetched; ``-o``/``-P`` write; ``--exec CMD`` runs
    shell code; downloaders and ffmpeg locations are programs; config files run as options."""
    parsed = parse_options(inv.argv, set(_YTDLP_VALUES))
    for option, value, index in parsed.options:
        role = _YTDLP_VALUES.get(option)
        if role is None or value is None or role == T:
            continue
        if role == "write" and "%(" in value:  # an output template: a file in its directory
            value = value.partition("%(")[0].rpartition("/")[0] or "."
        if role == "script":
            inv.script(value.replace("{}", "file").replace("%(filepath)q", "file"), index,
                       what=f"`{inv.name} {option}`")
            continue
        apply(inv, role, value, index, f"`{inv.name} {option}`")
    for word, index in parsed.positionals:
        if "://" in word:
            contact_url(inv, word, index, 443)
        else:  # (an ID of the default site)
            inv.network("www.youtube.com", 443, index)
    if not parsed.has("-o", "--output", "-P", "--paths", "-s", "--simulate", "--skip-download", "-j",
                      "--dump-json", "-F", "--list-formats", "--get-url", "-g"):
        inv.write(".", None, recursive=False)


register("yt-dlp youtube-dl yt-dlp_linux", model_ytdlp)

# -- small converters ------------------------------------------------------------------------------

SPECS: dict[str, Spec] = {
    # envsubst [-v] [SHELL-FORMAT]: stdin to stdout; the operand names variables
    "envsubst": Spec(args="text", stdin_out=False),
    "cwebp dwebp gif2webp img2webp": Spec(values={"-o": "write", "-q": T, "-m": T, "-resize": T, "-crop": T,
                                                  "-preset": T, "-z": T, "-alpha_q": T, "-size": T, "-psnr": T,
                                                  "-metadata": T, "-sharpness": T, "-f": T, "-sns": T, "-segments": T,
                                                  "-d": T, "-mt": T}),
    "optipng": Spec(args="write", values={"-out": "write", "-dir": "writer", "-o": T, "-log": "write", "-i": T,
                                          "-f": T, "-zc": T, "-zm": T, "-zs": T, "-zw": T}),
    "pngquant": Spec(args="read", values={"-o": "write", "--output": "write", "--ext": T, "--quality": T,
                                          "--speed": T, "-s": T, "--posterize": T, "--map": "read"},
                     flags={"-f": "writes-args", "--force": "writes-args"}),
    "gifsicle": Spec(values={"-o": "write", "--output": "write", "-O": T, "--colors": T, "--lossy": T,
                             "--resize": T, "--delay": T, "-d": T, "--loopcount": T, "-l": T},
                     flags={"-b": "writes-args", "--batch": "writes-args"}),
    "jpegoptim": Spec(args="write", values={"-d": "writer", "--dest": "writer", "-m": T, "--max": T, "-S": T,
                                            "--size": T, "-T": T, "--threshold": T}),
    "rsvg-convert": Spec(values={"-o": "write", "--output": "write", "-f": T, "--format": T, "-w": T, "-h": T,
                                 "--width": T, "--height": T, "-z": T, "--zoom": T, "-d": T, "-p": T, "-b": T,
                                 "--background-color": T, "-s": "read", "--stylesheet": "read"}),
    "img2pdf": Spec(values={"-o": "write", "--output": "write", "-S": T, "--pagesize": T, "--imgsize": T,
                            "--border": T, "--fit": T, "--title": T, "--author": T}),
    # (qpdf's valued options take their value only attached, `--password=P`, `--rotate=90`;
    # `--decrypt` and `--split-pages` are flags: the next word is a file)
    "qpdf": Spec(last="write", values={"--pages": T, "--encrypt": T, "--overlay": T, "--underlay": T},
                 flags={"--replace-input": "writes-args"}),
    "tesseract": Spec(last="write", values={"-l": T, "--psm": T, "--oem": T, "--dpi": T, "-c": T,
                                            "--tessdata-dir": "readr", "--user-words": "read",
                                            "--user-patterns": "read"}),
    "inkscape": Spec(values={"-o": "write", "--export-filename": "write", "--export-type": T, "-w": T, "-h": T,
                             "--export-width": T, "--export-height": T, "-d": T, "--export-dpi": T,
                             "--actions": "unknown:`inkscape --actions` runs actions that can write files",
                             "--export-id": T, "-i": T, "--export-area": T, "--export-background": T},
                     optional=frozenset()),
}
for _names, _spec in SPECS.items():
    register(_names, spec_model(_spec))

// Package output is what the gateway does to a tool's output before a
// model sees it: cleaning, caps and the output store.
//
// [Clean] removes what a person reviewing a transcript would not see but
// a model would read (escape sequences, controls, invisible characters),
// [CleanText] does the same for a server's short texts (an error, a
// stderr tail) and [StructuredClean] says whether structured content may
// pass as the server sent it. [Cap] cuts a text to a number of bytes and
// lines, on a line or UTF-8 boundary ([CutPoint]); [ClipUTF8] and
// [CountLines] are the one UTF-8 clipping and line count the engine uses.
// [Render] and [RenderResource] turn MCP content into the text that is
// cleaned and capped; [RenderNoted] adds what became of each binary item.
// [MediaItems] finds a content's images, audio and embedded blobs, and
// [CheckMedia] holds one to the allow list of image and audio types and
// their magic bytes before it may be passed on as it is.
// A [Store] keeps the whole of an output whose inline copy was cut, one
// directory per workspace with a TTL and a quota, and reads it back a
// page at a time ([Store.Read], the read_cache action); [Store.PutMedia]
// keeps an image or audio item too large to pass on, as base64.
//
// The package decides nothing about whether an output is cut: the caller
// passes its limits and calls Put when it wants the whole kept. It knows
// nothing of servers, policies or the engine. Its only I/O is the store's
// directory: it reads an output file only if it is a regular file, opened
// without following a link or blocking, and it reports errors without the
// paths they name, since they reach the model.
package output

/**
 * The images a sub-call sent (`llm_query(images=)`), as its `subcall_started` event records them:
 * size and format, and a thumbnail of at most 96 pixels a side, never the image's own bytes. The
 * same rules as the Python summary's (`rlm_kernel/jupyter/render.py`).
 */

/** One image as the runs panel shows it: a line about it, and its thumbnail where it may be shown. */
export interface ImageRecord {
  /** e.g. `PNG 640×480, 12,345 bytes` */
  about: string;
  thumbnail: string | null;
}

// A thumbnail is shown only as a small PNG data URL of plain base64: an address from a run (a saved
// trajectory's, say) could otherwise load a remote image, or be something other than an image.
const THUMBNAIL = /^data:image\/png;base64,[A-Za-z0-9+/]+={0,2}$/;
const THUMBNAIL_CHARS = 64_000;

/** How many images of one sub-call the panel draws; the rest are counted. */
export const IMAGES_SHOWN = 8;

/** The records of an event's `images` (a saved trajectory's event made before they existed has none). */
export function imageRecords(images: unknown): ImageRecord[] {
  if (!Array.isArray(images)) {
    return [];
  }
  return images.map((image: unknown) => {
    const record = (typeof image === 'object' && image !== null ? image : {}) as Record<string, unknown>;
    const side = (value: unknown): string => (typeof value === 'number' ? String(value) : '?');
    const kind = (typeof record.media_type === 'string' ? record.media_type : 'image').split('/').pop() ?? 'image';
    const bytes = typeof record.bytes === 'number' ? record.bytes : 0;
    const about = `${kind.toUpperCase()} ${side(record.width)}×${side(record.height)}, ${bytes.toLocaleString('en-US')} bytes`;
    const thumb = record.thumbnail;
    const shown = typeof thumb === 'string' && thumb.length <= THUMBNAIL_CHARS && THUMBNAIL.test(thumb);
    return { about, thumbnail: shown ? thumb : null };
  });
}

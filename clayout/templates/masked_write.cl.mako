// clayout masked write: copy an image of bytes (computed on the host, or
// another device buffer's bytes from image_first on) into a buffer, changing
// only the bits its mask sets. Each work-item owns one byte, so nibbles of a
// byte shared with another tensor keep their value.

__kernel void masked_write(__global uchar *restrict dst,
        __global const uchar *restrict image, __global const uchar *restrict mask,
        const ulong first, const ulong image_first, const ulong count)
{
    const ulong i = get_global_id(0);
    if (i >= count)
        return;
    const uchar m = mask[i];
    const uchar value = image[image_first + i];
    if (m == 0xff)
        dst[first + i] = value;
    else if (m)
        dst[first + i] = (uchar)((dst[first + i] & ~m) | (value & m));
}

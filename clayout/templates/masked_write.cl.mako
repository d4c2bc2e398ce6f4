// clayout masked write: copy a host-computed image of bytes into a buffer,
// changing only the bits its mask sets. Each work-item owns one byte, so
// nibbles of a byte shared with another tensor keep their value.

__kernel void masked_write(__global uchar *restrict dst,
        __global const uchar *restrict image, __global const uchar *restrict mask,
        const ulong first, const ulong count)
{
    const ulong i = get_global_id(0);
    if (i >= count)
        return;
    const uchar m = mask[i];
    if (m == 0xff)
        dst[first + i] = image[i];
    else if (m)
        dst[first + i] = (uchar)((dst[first + i] & ~m) | (image[i] & m));
}

/* stb_impl.c - stb_image compiled into the image fuzzer (only there), from
 * Debian's libstb-dev header, so AddressSanitizer instruments the decoder
 * itself. The product links Debian's libstb instead. */
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#include <stb_image.h>

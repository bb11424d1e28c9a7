/* image.h -- module "lattice.image": PNG output (and input, for tests) of 2-D
** data such as fields, with libpng. See docs/language.md, "Images". */
#ifndef LATTICE_LANG_IMAGE_H
#define LATTICE_LANG_IMAGE_H

#include <lua.h>

int luaopen_lattice_image(lua_State *L);

#endif

/** Every knob of the module in one place ({@link dev.panamax.collectives.internal.config.Settings}): lowest layer,
 * imports nothing of the module. */
package dev.panamax.collectives.internal.config;
